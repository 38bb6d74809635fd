// Package admission is what an admission plugin sees of the API server: the attributes of one
// write (Attributes), the Plugin interface the server's chain calls, the Lookup plugins read other
// objects through, the Source informer caches are fed from, and the warnings a plugin adds for the
// client. The plugins live in the packages below it, one each; the API server's HTTP layer runs the
// chain and implements Lookup and Source.
//
// It must not import the HTTP layer (internal/apiserver), storage or etcd: the plugins import it
// so that they never point up into the server.
package admission
