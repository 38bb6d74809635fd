// Package proxy is skiff's service proxy (kube-proxy's job on every worker node): it watches
// Services and EndpointSlices and programs the node's packet filter so that cluster IPs,
// NodePorts, external IPs and load-balancer IPs reach the Services' endpoints.
//
// Decide, then do: Build is a pure function from the Services, the EndpointSlices and the node's
// Config to a Ruleset (chains of iptables rules); Plan turns the previous and the desired Ruleset
// into the iptables-restore input that rewrites only the chains that changed; the Proxier is the
// thin layer that watches the API, calls them and runs iptables-restore.
//
// Every chain, hook rule and interface it creates carries the node's Prefix, derived from the
// node's data dir: several nodes may share one host network namespace, a restarted node finds
// its previous run's rules, and removing one node's rules never touches another's.
//
// It owns only what carries its prefix. It must not flush or rewrite other chains, change the
// default policies, or reach the cluster other than through client-go (no apiserver, storage or
// etcd imports, no upstream kube-proxy code).
package proxy
