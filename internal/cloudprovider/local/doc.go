// Package local is skiff's built-in cloud provider, `--cloud-provider local`: type LoadBalancer
// Services get the addresses of the cluster's nodes as their external addresses (like k3s's
// ServiceLB: the service's ports answer on every chosen node's address, through the service
// proxy's load-balancer rules), node addresses are the Node's own, and routes are the
// host-gateway routes every worker's pod network agent (internal/podnet) programs from the Node
// objects.
//
// Assign is the pure decision (which nodes' addresses a Service gets), table-tested. It must not
// program anything on nodes itself, reach the cluster other than through client-go, or keep
// package-level state.
package local
