// Package leasereconciler keeps the "kubernetes" Service's endpoints equal to the API servers that
// are alive, as kube-apiserver's --endpoint-reconciler-type=lease does, and keeps each API server's
// identity Lease (kube-system/apiserver-<hash>) renewed.
//
// Every API server holds a master lease: an etcd key /registry/masterleases/<ip> bound to an etcd
// lease with a short TTL, refreshed well within it. Each server lists the keys and writes the
// Endpoints and EndpointSlice "kubernetes" in default to exactly the live servers' addresses; an etcd
// watch on the prefix makes a lapsed or removed key show at once. A stopping server deletes its key
// and rewrites the endpoints without itself before its API server stops serving.
//
// Desired and the object builders are pure and table-tested; Run carries them out. It writes the
// API objects through client-go (the server's loopback client) and touches etcd only under the
// masterleases prefix. It must not write any other etcd key.
package leasereconciler
