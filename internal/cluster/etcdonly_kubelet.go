package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
)

// etcdNodeKubeletRoles are the roles an etcd-only node runs besides its member when it runs the
// kubelet (--control-plane-kubelet, automatic by default: where the node can): the kubelet (registering a Node tainted node-role.kubernetes.io/etcd:
// NoExecute, so only pods that tolerate it, such as DaemonSets, run there; its pod range comes
// from node IPAM, as a joined worker's), the role labels (node-role.kubernetes.io/etcd, patched
// with the node's admin kubeconfig since NodeRestriction forbids a kubelet to set them), the pod
// network agent, cluster DNS, the service proxy and the network policy agent. Every client goes through the node-local
// balancer with an identity minted from the cluster CA the node's keys brought.
func etcdNodeKubeletRoles(cfg *Config, now time.Time) ([]role, error) {
	nodeRC, err := componentRESTConfig(cfg, "system:node:"+cfg.NodeName, []string{"system:nodes"}, now)
	if err != nil {
		return nil, err
	}
	serverTLS, err := kubeletServingTLS(cfg, now)
	if err != nil {
		return nil, err
	}
	adminRC, err := clientcmd.BuildConfigFromFlags("", cfg.AdminKubeconfigPath())
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig for the node role labels: %w", err)
	}
	admin, err := kubernetes.NewForConfig(adminRC)
	if err != nil {
		return nil, err
	}
	dnsRC, err := componentRESTConfig(cfg, bootstrappolicy.SkiffDNS, nil, now)
	if err != nil {
		return nil, err
	}
	proxyRC, err := componentRESTConfig(cfg, bootstrappolicy.KubeProxy, nil, now)
	if err != nil {
		return nil, err
	}
	netpolRC, err := componentRESTConfig(cfg, bootstrappolicy.SkiffNetworkPolicy, nil, now)
	if err != nil {
		return nil, err
	}
	id := kubeletIdentity{rest: throughLB(cfg, nodeRC), serverTLS: serverTLS, taints: nodeTaints(cfg.Roles)}
	roles := []role{
		{name: "node role labels", run: func(ctx context.Context) error {
			labelNodeRoles(ctx, admin, cfg.NodeName, kubeletRoles(cfg.Roles), cfg.Logger)
			return nil
		}},
		{name: "worker", run: func(ctx context.Context) error { return runKubelet(ctx, cfg, id) }},
		{name: "pod network", run: func(ctx context.Context) error { return runPodNetwork(ctx, cfg, time.Now()) }},
		{name: "dns", run: func(ctx context.Context) error {
			if _, ok := dnsAddress(cfg); !ok {
				cfg.Logger.Info("node advertises a loopback address; cluster DNS not served", "advertise-address", cfg.AdvertiseAddress)
				return nil
			}
			return runDNSAs(ctx, cfg, prometheus.NewRegistry(), throughLB(cfg, dnsRC), nil)
		}},
	}
	if !cfg.DisableProxy {
		roles = append(roles, role{name: "service proxy", run: func(ctx context.Context) error {
			return runProxyAs(ctx, cfg, prometheus.NewRegistry(), throughLB(cfg, proxyRC), nil)
		}})
	}
	if !cfg.DisableNetworkPolicy {
		roles = append(roles, role{name: "network policy", run: func(ctx context.Context) error {
			return runNetworkPolicyAs(ctx, cfg, prometheus.NewRegistry(), throughLB(cfg, netpolRC), nil)
		}})
	}
	return roles, nil
}
