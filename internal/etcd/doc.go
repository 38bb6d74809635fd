// Package etcd owns the lifecycle of the etcd member a skiff node may run (start, readiness, stop)
// and the construction of etcd clients, for the embedded member as well as for an external etcd
// cluster (--etcd-servers).
//
// It knows nothing about Kubernetes objects: the typed store on top of etcd lives in
// internal/storage. It must not import the API server or any other skiff component.
package etcd
