package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// nodeStatus owns the node's object: it registers the Node, keeps its status and its Lease
// current (node.go, lease.go), writes the CNI network list when the node's pod CIDRs are
// assigned, and answers the pod sync's questions about the node (hostIPs, allocatable, current).
// It reads the runtime only for its version, readiness and images, and the rest of the kubelet
// only through inUseVolumes.
type nodeStatus struct {
	cfg     Config
	client  kubernetes.Interface
	runtime cri.Runtime
	clock   clock.WithTicker
	log     *slog.Logger
	machine MachineInfo
	volumes inUseVolumes

	mu sync.Mutex
	// node is the last Node object written or read.
	node *corev1.Node
	// hostIPs are the node's internal IPs, the pods' hostIPs.
	hostIPs []corev1.HostIP
	// cniCIDRs are the pod CIDRs the CNI network list was last written for.
	cniCIDRs []string
}

// inUseVolumes names the volumes mounted on the node, the Node's status.volumesInUse (the volume
// manager's).
type inUseVolumes interface {
	csiVolumesInUse() []corev1.UniqueVolumeName
}

// register registers the Node (retrying until ctx ends) and records it.
func (n *nodeStatus) register(ctx context.Context) error {
	node, err := n.registerWithRetry(ctx)
	if err != nil {
		return err
	}
	n.setNode(node)
	return nil
}

// current is the last Node object written or read.
func (n *nodeStatus) current() *corev1.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.node
}

// nodeAllocatable is the Node's allocatable as the API has it (which also carries the extended
// resources others advertise for the node), or the kubelet's own before the Node says.
func (n *nodeStatus) nodeAllocatable() corev1.ResourceList {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.node != nil && len(n.node.Status.Allocatable) > 0 {
		return n.node.Status.Allocatable
	}
	_, allocatable := n.capacity()
	return allocatable
}

func (n *nodeStatus) registerWithRetry(ctx context.Context) (*corev1.Node, error) {
	delay := 200 * time.Millisecond
	for {
		node, err := n.registerNode(ctx)
		if err == nil {
			return node, nil
		}
		n.log.Error("node registration failed; retrying", "err", err, "after", delay)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kubelet: %w (last error: %v)", ctx.Err(), err)
		case <-n.clock.After(delay):
		}
		delay = min(delay*2, 7*time.Second)
	}
}

// observe records the Node its watch delivered. The pod CIDR the node IPAM controller assigns
// after registration reaches the kubelet this way: an unchanged NotReady status is posted again
// only at the report frequency (minutes), so the answers of status writes alone would leave the
// node without its pod network, and NotReady, that long.
func (n *nodeStatus) observe(obj any) {
	if node, ok := obj.(*corev1.Node); ok && node.Name == n.cfg.NodeName {
		n.setNode(node)
	}
}

// setNode records the latest Node and reacts to a newly assigned pod CIDR
// by writing the CNI network list. A Node older than the one held (a watch event that arrives
// after the answer of a later status write) is ignored.
func (n *nodeStatus) setNode(node *corev1.Node) {
	n.mu.Lock()
	if n.node != nil {
		if order, ok := compareResourceVersions(node.ResourceVersion, n.node.ResourceVersion); ok && order < 0 {
			n.mu.Unlock()
			return
		}
	}
	n.node = node
	var hostIPs []corev1.HostIP
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			hostIPs = append(hostIPs, corev1.HostIP{IP: a.Address})
		}
	}
	if len(hostIPs) == 0 {
		for _, a := range n.nodeAddresses() {
			if a.Type == corev1.NodeInternalIP {
				hostIPs = append(hostIPs, corev1.HostIP{IP: a.Address})
			}
		}
	}
	n.hostIPs = hostIPs
	cidrs := node.Spec.PodCIDRs
	if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
		cidrs = []string{node.Spec.PodCIDR}
	}
	changed := n.cfg.CNIConfDir != "" && len(cidrs) > 0 && !slices.Equal(cidrs, n.cniCIDRs)
	n.mu.Unlock()
	if !changed {
		return
	}
	network := containerd.CNINetwork{Name: n.cfg.CNINetworkName, Bridge: n.cfg.CNIBridge, PodCIDRs: cidrs}
	if n.cfg.SkiffCNI {
		// Leases live with the bridge, which is the host's (as host-local's
		// /var/lib/cni/networks), not with this node's data dir: a node started
		// afresh on a host whose bridge still carries pods of an earlier node (one
		// killed with -9 leaves its shims and veths) must not hand out their
		// addresses again, or two pods answer ARP for one address.
		network.Skiff = &containerd.SkiffCNI{StateDir: cniLeaseDir, PortmapPath: n.cfg.CNIPortmapPath}
	}
	if err := containerd.WriteCNIConfig(n.cfg.CNIConfDir, network); err != nil {
		n.log.Error("write CNI config", "err", err)
		return
	}
	n.mu.Lock()
	n.cniCIDRs = append([]string(nil), cidrs...)
	n.mu.Unlock()
	n.log.Info("pod network configured", "podCIDRs", cidrs)
}

func (n *nodeStatus) currentHostIPs() []corev1.HostIP {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]corev1.HostIP(nil), n.hostIPs...)
}

func (n *nodeStatus) currentAllocatable() corev1.ResourceList {
	_, allocatable := n.capacity()
	return allocatable
}

func (n *nodeStatus) leaseLoop(ctx context.Context) {
	ticker := n.clock.NewTicker(n.cfg.LeaseRenewInterval)
	defer ticker.Stop()
	for {
		n.mu.Lock()
		node := n.node
		n.mu.Unlock()
		if err := n.renewLease(ctx, node); err != nil && ctx.Err() == nil {
			n.log.Error("lease renewal failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

func (n *nodeStatus) nodeStatusLoop(ctx context.Context) {
	ticker := n.clock.NewTicker(n.cfg.NodeStatusUpdateFrequency)
	defer ticker.Stop()
	var lastReport time.Time
	for {
		n.mu.Lock()
		node := n.node
		n.mu.Unlock()
		status := n.desiredNodeStatus(ctx, &node.Status)
		if !sameNodeStatus(status, node.Status) || n.clock.Since(lastReport) >= n.cfg.NodeStatusReportFrequency {
			updated, err := n.postNodeStatus(ctx, node, status)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				n.log.Error("node status update failed", "err", err)
				if fresh, getErr := n.client.CoreV1().Nodes().Get(ctx, n.cfg.NodeName, metav1.GetOptions{}); getErr == nil {
					n.setNode(fresh)
				} else if reg, regErr := n.registerNode(ctx); regErr == nil {
					// The Node was deleted: register it again.
					n.setNode(reg)
				}
			} else {
				lastReport = n.clock.Now()
				n.setNode(updated)
				node = updated
			}
		}
		// The ticker keeps the update frequency's cadence; a node not yet Ready looks sooner.
		var sooner <-chan time.Time
		if wait, ok := nodeStatusWait(node.Status, n.cfg); ok {
			sooner = n.clock.After(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-sooner:
		}
	}
}

// nodeStatusWait says whether the status loop computes the status again sooner than its update
// frequency, and when: the not-ready interval while the posted status is not Ready. A new node
// registers before its pod network is configured (its podCIDR comes from the control plane),
// so its first status is NotReady; at the update frequency alone, Ready followed up to 10s
// after the network was.
func nodeStatusWait(posted corev1.NodeStatus, cfg Config) (time.Duration, bool) {
	for _, c := range posted.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return 0, false
		}
	}
	if cfg.NodeStatusNotReadyInterval >= cfg.NodeStatusUpdateFrequency {
		return 0, false
	}
	return cfg.NodeStatusNotReadyInterval, true
}

// cniLeaseDir is where skiff's CNI plugin keeps the address leases of every bridge on the host, one
// directory per network name.
const cniLeaseDir = "/var/lib/cni/skiff"
