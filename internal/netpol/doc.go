// Package netpol enforces NetworkPolicy on a worker: the policy agent beside the service proxy.
//
// Decide, then do. Build is a pure function from the NetworkPolicies, Pods and Namespaces the
// node's informers hold and the node's name to the content of one nftables table of the node's
// own (Ruleset): verdict maps from each isolated local pod's address to a chain of the policies
// that select it, one chain per policy and direction, and the address sets of the rules' peers
// (named by their content, shared between rules and never changed in place).
// Plan turns the previous and the desired content into one `nft -f` transaction that rewrites only
// the chains, set elements and map elements that changed. The Agent is the thin layer that
// watches the API through client-go and runs nft.
//
// The rules hook the forward path, after the service proxy's DNAT, so traffic to a Service is
// judged on the backend pod's address and port; with bridge-nf-call-iptables on (the agent turns
// it on), traffic between two pods of one node passes there too. Egress rules are checked on the
// sending pod's node and ingress rules on the receiving pod's node, each node holding the maps of
// its own pods only. Traffic the node itself sends (kubelet probes) and traffic from pods to the
// node's own addresses (its DNS) never takes the forward path, so it is always allowed, as
// Kubernetes documents. Replies of allowed connections pass by conntrack.
//
// It owns only the table named Table(prefix). It never deletes that table when it stops (a
// restarted node keeps enforcing until its first sync rewrites the table in one transaction);
// `skiff uninstall` removes it. It must not touch other tables, and it reaches the cluster only
// through client-go (no apiserver, storage or etcd imports).
package netpol
