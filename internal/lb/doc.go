// Package lb is the node-local API server load balancer: a TCP proxy on a loopback address that
// the node's clients (kubelet, local kubeconfigs) use instead of one API server's address.
//
// It owns the choice of API server for new connections, the health checks of the API servers
// (HTTPS GET /readyz), the closing of connections to a backend that went bad, and learning the API
// servers from the "kubernetes" EndpointSlices (watched through the balancer itself).
//
// The decisions live in State, a state machine without I/O in the shape of etcd-io/raft's
// Step/Ready: events in (probe results, dial failures, endpoint lists, time), a plan out (which
// backends to probe, whose connections to close, the order to dial). Balancer carries the plan out.
//
// It must not terminate TLS (clients verify the API servers' certificates end to end), must not
// import the API server, storage or etcd, and reaches the cluster only through client-go.
package lb
