package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/podnet"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// podNetworkHost is the node's share of the host's routing and nat tables: a metric and a chain
// named from the data dir (stable across restarts, distinct between nodes sharing a host).
func podNetworkHost(cfg *Config) podnet.Host {
	id := strings.TrimPrefix(proxy.NodePrefix(cfg.DataDir), "SK")
	return podnet.Host{Metric: 100 + int(fnvHash(cfg.DataDir+"/podnet")%9000), Chain: "SKN" + id + "-MASQ"}
}

// runPodNetwork keeps this worker's routes to the other nodes' pods and its masquerade chain
// (internal/podnet) with the node's own identity, until ctx ends.
func runPodNetwork(ctx context.Context, cfg *Config, now time.Time) error {
	restCfg, err := componentRESTConfig(cfg, "system:node:"+cfg.NodeName, []string{"system:nodes"}, now)
	if err != nil {
		return err
	}
	return runPodNetworkAs(ctx, cfg, throughLB(cfg, restCfg))
}

// runPodNetworkAs runs the pod network agent with the given client configuration (a joined
// worker's node credentials).
func runPodNetworkAs(ctx context.Context, cfg *Config, restCfg *rest.Config) error {
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("pod network client: %w", err)
	}
	opts := podnet.Options{NodeName: cfg.NodeName, Host: podNetworkHost(cfg), Logger: cfg.Logger.With("component", "podnet")}
	if p, err := netip.ParsePrefix(cfg.ClusterCIDR); err == nil && p.Addr().Is4() {
		opts.ClusterCIDR = p.Masked()
	}
	return podnet.Run(ctx, client, opts)
}
