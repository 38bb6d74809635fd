// Package computed is a read-only storage.Interface whose objects are produced on every read by a
// function instead of being kept in etcd, for resources Kubernetes computes (componentstatuses).
// Get and List work (with selectors, without paging); writes and watches fail. It must not import
// the API server or the registry.
package computed
