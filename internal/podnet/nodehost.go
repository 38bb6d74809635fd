package podnet

import (
	"hash/fnv"
	"strings"
)

// NodeHost is a node's share of the host's routing and nat tables: a route metric and a
// masquerade chain of its own, so nodes sharing a host keep apart. nodePrefix is the node's
// service-proxy prefix (proxy.NodePrefix of its data dir, "SK" and six characters), which names
// the chain; the metric is a hash of the data dir. Both are stable across restarts, so the running
// node and skiff uninstall name the same routes and chain.
func NodeHost(nodePrefix, dataDir string) Host {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dataDir + "/podnet"))
	return Host{Metric: 100 + int(h.Sum32()%9000), Chain: "SKN" + strings.TrimPrefix(nodePrefix, "SK") + "-MASQ"}
}
