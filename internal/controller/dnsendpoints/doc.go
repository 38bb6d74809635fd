// Package dnsendpoints keeps the EndpointSlices of the selectorless kube-dns Service in
// kube-system: one endpoint per worker Node at the node's InternalIP (where skiff's node-local DNS
// answers), with nodeName set and ready when the node is, in slices of at most
// MaxEndpointsPerSlice where each node keeps its place. With the Service's
// internalTrafficPolicy Local, each node's proxy sends a pod's queries to its own node's DNS.
//
// It decides the wanted slices with pure functions (Desired, Plan) and only then writes; it owns
// only the slices labelled managed-by ManagedBy, never the Service (the control plane ensures
// it) and never other slices. It reaches the cluster only through client-go.
package dnsendpoints
