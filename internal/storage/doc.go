// Package storage is the typed object store the API server keeps its objects in: get, list, watch,
// create, guaranteed (compare-and-swap) update and delete of runtime.Objects on etcd, with the etcd
// revision as every object's resourceVersion.
//
// It is imported only by the API server: schedulers, controllers, kubelets and proxies reach the
// cluster through client-go and never through this package. It must not import the API server.
package storage
