package cluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/kubelet"
)

// kubeletRoles are the node-role.kubernetes.io/<role> labels of a node, in kubeadm's spelling for the
// control plane (the scheduler's messages and kubectl's ROLES column use it).
func kubeletRoles(roles []Role) []string {
	var out []string
	for _, r := range roles {
		switch r {
		case RoleControlPlane:
			out = append(out, "control-plane")
		default:
			out = append(out, string(r))
		}
	}
	return out
}

// firstPodCIDR is the first /24 of the cluster CIDR: the pod range of a node that registers before
// node IPAM has given it one (a single-node cluster).
func firstPodCIDR(clusterCIDR string) (string, error) {
	_, ipnet, err := net.ParseCIDR(clusterCIDR)
	if err != nil {
		return "", err
	}
	ones, bits := ipnet.Mask.Size()
	if bits != 32 || ones > 24 {
		return ipnet.String(), nil
	}
	return (&net.IPNet{IP: ipnet.IP, Mask: net.CIDRMask(24, 32)}).String(), nil
}

// runWorker runs the node's container runtime and kubelet with the node's own identity
// (CN=system:node:<name>, O=system:nodes).
func runWorker(ctx context.Context, cfg *Config, now time.Time) error {
	restCfg, err := componentRESTConfig(cfg, "system:node:"+cfg.NodeName, []string{"system:nodes"}, now)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	podCIDR, err := firstPodCIDR(cfg.ClusterCIDR)
	if err != nil {
		return fmt.Errorf("cluster CIDR: %w", err)
	}
	kcfg := kubelet.Config{
		NodeName: cfg.NodeName,
		Roles:    kubeletRoles(cfg.Roles),
		DataDir:  filepath.Join(cfg.DataDir, "kubelet"),
		PodCIDRs: []string{podCIDR},
	}
	if ip := net.ParseIP(cfg.AdvertiseAddress); ip != nil && !ip.IsLoopback() {
		kcfg.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: cfg.AdvertiseAddress}, {Type: corev1.NodeHostName, Address: cfg.NodeName}}
	}
	return kubelet.RunWorker(ctx, kubelet.WorkerConfig{Kubelet: kcfg, RuntimeEndpoint: cfg.ContainerRuntimeEndpoint}, client, cfg.Logger)
}
