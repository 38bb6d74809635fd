// Package proxy is skiff's service proxy (kube-proxy's job on every worker node): it watches
// Services and EndpointSlices and programs the node's packet filter so that cluster IPs,
// NodePorts, external IPs and load-balancer IPs reach the Services' endpoints.
//
// Two backends (Options.Mode) program the same behaviour. nftables, the default: BuildNft is a
// pure function from the Services, the EndpointSlices and the node's Config to the content of one
// nftables table of the node's own (NftTable, with its own base chains); PlanNft turns the
// previous and the desired content into one `nft -f` transaction that rewrites only the chains
// and map elements that changed. iptables: Build gives chains of iptables rules and Plan the
// iptables-restore input that rewrites only the chains that changed. Decide, then do: the
// Proxier is the thin layer that watches the API, calls them and runs nft or iptables-restore.
//
// Every chain, hook rule, table and interface it creates carries the node's Prefix, derived from
// the node's data dir: several nodes may share one host network namespace, a restarted node finds
// its previous run's rules (of either mode), and removing one node's rules never touches
// another's.
//
// It owns only what carries its prefix. It must not flush or rewrite other chains or tables,
// change the default policies, or reach the cluster other than through client-go (no apiserver,
// storage or etcd imports, no upstream kube-proxy code).
package proxy
