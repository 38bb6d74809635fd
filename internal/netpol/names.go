package netpol

import "strings"

// Table is the nftables table (family ip) of the node whose service-proxy prefix is prefix
// (proxy.NodePrefix of its data dir): distinct per node sharing a host, stable across restarts.
func Table(prefix string) string { return "skiff-netpol-" + strings.ToLower(prefix) }

// Named counters of the table: packets dropped because no policy of the direction allowed them.
const (
	CounterDroppedIngress = "dropped-ingress"
	CounterDroppedEgress  = "dropped-egress"
)
