package cluster

import (
	"context"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"hash/fnv"
	"k8s.io/client-go/rest"
	"net"
	"net/netip"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// proxyOptions derive the service proxy's settings from the node's: the chain prefix and device
// from the data dir (stable across restarts, distinct between nodes sharing a host), NodePorts on
// the advertised address and 127.0.0.1 (every local address when bound to all).
func proxyOptions(cfg *Config) (proxy.Options, error) {
	prefix := proxy.NodePrefix(cfg.DataDir)
	opts := proxy.Options{
		Config: proxy.Config{Prefix: prefix, NodeName: cfg.NodeName},
		Mode:   cfg.ProxyMode,
		Device: proxy.DeviceName(prefix),
		// Nodes sharing a host each route the service range to their own device, so their routes
		// differ by metric.
		DeviceMetric:       100 + int(fnvHash(cfg.DataDir)%9000),
		LocalhostNodePorts: true,
		Conntrack:          proxy.DefaultConntrackTimeouts(),
		Logger:             cfg.Logger.With("component", "proxy"),
	}
	svc, err := netip.ParsePrefix(cfg.ServiceCIDR)
	if err != nil {
		return opts, fmt.Errorf("service CIDR: %w", err)
	}
	if svc.Addr().Is4() {
		opts.ServiceCIDR = svc.Masked()
	}
	if pods, err := netip.ParsePrefix(cfg.ClusterCIDR); err == nil && pods.Addr().Is4() {
		opts.ClusterCIDR = pods.Masked()
	}
	if a, err := netip.ParseAddr(cfg.AdvertiseAddress); err == nil && a.Is4() {
		opts.NodeIP = a
	}
	if cfg.ProxyHealthzPort != 0 {
		opts.HealthzAddress = net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.ProxyHealthzPort))
	}
	if bind, err := netip.ParseAddr(cfg.BindAddress); err == nil && !bind.IsUnspecified() {
		// Health-check node ports answer on the node's address only, as NodePorts do.
		opts.HealthCheckAddress = bind
		for _, s := range []string{cfg.AdvertiseAddress, "127.0.0.1"} {
			if a, err := netip.ParseAddr(s); err == nil && a.Is4() && !containsAddr(opts.NodePortAddresses, a) {
				opts.NodePortAddresses = append(opts.NodePortAddresses, a)
			}
		}
	}
	return opts, nil
}

func containsAddr(addrs []netip.Addr, a netip.Addr) bool {
	for _, b := range addrs {
		if a == b {
			return true
		}
	}
	return false
}

func fnvHash(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// runProxy runs the service proxy with its own identity (system:kube-proxy, bound to
// system:node-proxier) until ctx ends; it removes its rules before it returns. Its metrics are
// served on the API server's /metrics with the other components'.
//
// inProcess (nil on a node without the API server) gives it informers on the API server's watch
// cache instead of a watch over HTTPS.
func runProxy(ctx context.Context, cfg *Config, metrics *componentMetrics, now time.Time, inProcess *local.Informers) error {
	restCfg, err := componentRESTConfig(cfg, bootstrappolicy.KubeProxy, nil, now)
	if err != nil {
		return err
	}
	return runProxyAs(ctx, cfg, metrics.fresh("proxy"), restCfg, inProcess)
}

// runProxyAs runs the service proxy with the given client configuration: a joined worker, which
// cannot issue itself a system:kube-proxy certificate, runs it as its node (system:nodes is
// bound to system:node-proxier, see JoinClusterRoleBindings).
func runProxyAs(ctx context.Context, cfg *Config, reg prometheus.Registerer, restCfg *rest.Config, inProcess *local.Informers) error {
	opts, err := proxyOptions(cfg)
	if err != nil {
		return err
	}
	if inProcess != nil {
		opts.PrepareInformers = inProcess.Register
	}
	opts.Metrics = proxy.NewMetrics(reg)
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("service proxy client: %w", err)
	}
	return proxy.Run(ctx, client, opts)
}
