// Package etcd3 implements storage.Interface on an etcd v3 cluster: objects are encoded with a
// runtime.Codec under full keys, the etcd mod revision is every object's resourceVersion, writes are
// transactions compared on revisions, lists page at one revision, and watches are etcd watches with
// previous values so label/field predicates can be evaluated on both sides of a change.
//
// It must not import the API server; mapping its errors to HTTP statuses is the job of the API
// server's store (store.ToAPIError).
package etcd3
