// Package cluster composes one skiff node from its roles: certificates, the embedded or external
// etcd, the API server, and the control-plane components, which it connects to the API server through
// client-go with their own client certificates. It is the only package that imports every component,
// and only cmd imports it.
package cluster
