// Package etcdapi holds the wire types of skiff's etcd membership endpoints (served by the API
// server under /skiff/v1/etcd/, the API server being the only etcd client) and a small client for
// them that takes a *rest.Config, for `skiff status`, `skiff node remove` and joining etcd nodes.
//
// It must stay a leaf an API client can import: no etcd client, no API server, no storage.
package etcdapi
