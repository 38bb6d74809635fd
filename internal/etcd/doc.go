// Package etcd owns the lifecycle of the etcd member a skiff node may run (start, readiness, stop)
// and the construction of etcd clients, for the embedded member as well as for an external etcd
// cluster (--etcd-servers). An embedded member also serves its gRPC API in process
// (Member.InProcessClient): etcd's own server and interceptors over an in-memory connection, for
// the API server that embeds it.
//
// It knows nothing about Kubernetes objects: the typed store on top of etcd lives in
// internal/storage. It must not import the API server or any other skiff component.
package etcd
