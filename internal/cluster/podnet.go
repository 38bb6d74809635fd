package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/podnet"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// podNetworkHost is the node's share of the host's routing and nat tables, named from the data dir
// as skiff uninstall names them (podnet.NodeHost).
func podNetworkHost(cfg *Config) podnet.Host {
	return podnet.NodeHost(proxy.NodePrefix(cfg.DataDir), cfg.DataDir)
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
