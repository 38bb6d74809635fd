// Package addresses puts the Gateways' own addresses this node holds (internal/controller/gateway's
// Holder election) on the network interface that carries the node's address, and takes off
// those it put there and no longer holds, so the data plane can bind them and the node answers
// ARP for them on its segment (as MetalLB's layer-2 mode and kube-vip do). A gratuitous ARP
// follows each address taken, so neighbours move to the new holder at once after a failover.
//
// Decide, then do: plan is the pure decision (which addresses to add and remove, which are
// ours), table-tested; Holder carries it out with netlink. Addresses it finds on the interface
// that it did not put there (an operator's) are used, never removed. What it put there is
// recorded in a state file, so a node restarted after a crash removes what it held before.
//
// It must not decide which addresses the node holds, reach the cluster, or keep package-level
// mutable state.
package addresses
