// Package podnet is the pod network across nodes on every worker, host-gateway style: each other
// node's podCIDR is routed via that node's InternalIP, kept in sync with the Node objects (a node
// that goes takes its route with it), and pod traffic leaving the cluster is masqueraded while
// pod-to-pod traffic keeps the client pod's address.
//
// Decide, then do: Desire (pure) turns the Nodes and the host's on-link subnets into the routes
// this node should hold; Plan (pure) diffs them against the routes present; MasqueradeRules (pure)
// gives the masquerade chain. The Agent is the thin layer that watches Nodes through client-go and
// applies the plan with netlink and iptables.
//
// It owns only routes carrying its protocol number and its node's metric, and the one nat chain
// named for its node; it must not touch other routes or chains, and it never reaches the cluster
// other than through client-go (no apiserver, storage or etcd imports). It does not create the
// pod bridge (the CNI plugin does) and needs nothing of how that bridge is made.
package podnet
