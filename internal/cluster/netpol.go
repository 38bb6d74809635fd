package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/netpol"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// netpolResources: the network policy agent's informers.
func netpolResources() []schema.GroupResource {
	return []schema.GroupResource{{Resource: "pods"}, {Resource: "namespaces"}, {Group: "networking.k8s.io", Resource: "networkpolicies"}}
}

// runNetworkPolicy enforces NetworkPolicy on this worker with its own identity
// (system:skiff:network-policy); inProcess (nil without the API server in this process) gives it
// informers on the API server's watch cache. Its metrics are served with the other components'.
func runNetworkPolicy(ctx context.Context, cfg *Config, metrics *componentMetrics, now time.Time, inProcess *local.Informers) error {
	restCfg, err := componentRESTConfig(cfg, bootstrappolicy.SkiffNetworkPolicy, nil, now)
	if err != nil {
		return err
	}
	return runNetworkPolicyAs(ctx, cfg, metrics.fresh("netpol"), restCfg, inProcess)
}

// runNetworkPolicyAs runs the agent with the given client configuration: a joined worker runs it
// as its node (system:nodes is bound to the agent's role, see JoinClusterRoleBindings).
func runNetworkPolicyAs(ctx context.Context, cfg *Config, reg prometheus.Registerer, restCfg *rest.Config, inProcess *local.Informers) error {
	prefix := proxy.NodePrefix(cfg.DataDir)
	opts := netpol.Options{
		NodeName: cfg.NodeName,
		Prefix:   prefix,
		LogDrops: cfg.NetworkPolicyLog,
		Logger:   cfg.Logger.With("component", "netpol"),
		Metrics:  netpol.NewMetrics(reg, proxy.Host{}, netpol.Table(prefix)),
	}
	if inProcess != nil {
		opts.PrepareInformers = inProcess.Register
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("network policy client: %w", err)
	}
	if opts.Dynamic, err = dynamic.NewForConfig(restCfg); err != nil {
		return fmt.Errorf("network policy dynamic client: %w", err)
	}
	return netpol.Run(ctx, client, opts)
}
