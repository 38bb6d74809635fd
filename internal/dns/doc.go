// Package dns is skiff's cluster DNS: it answers <svc>.<ns>.svc.<domain>, headless per-endpoint
// names, SRV records of named ports, pod names (a-b-c-d.<ns>.pod.<domain>), ExternalName CNAMEs and
// PTR records of service and headless endpoint addresses from informer caches of Services,
// EndpointSlices and Namespaces, and forwards every other name to the node's resolvers through a
// small cache (negative answers cached for the SOA minimum, capped).
//
// The answers are computed by pure code (Resolve over a View) and table-tested; the server
// (UDP and TCP, EDNS0, truncation) and the forwarder are the thin I/O around it.
//
// It reaches the cluster only through client-go informers and must not import the API server,
// storage or etcd; it never writes to the API. It serves no zone but the cluster domain and the
// reverse names of the cluster's own addresses.
package dns
