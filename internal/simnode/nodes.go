package simnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const (
	// SimulatedAnnotation marks every Node the simulator registers.
	SimulatedAnnotation = "simnode.skiff.sh/simulated"

	kubeletPort = 10250

	// Condition reasons and messages as the kubelet writes them.
	reasonKubeletReady       = "KubeletReady"
	messageKubeletReady      = "kubelet is posting ready status"
	reasonSufficientMemory   = "KubeletHasSufficientMemory"
	messageSufficientMemory  = "kubelet has sufficient memory available"
	reasonNoDiskPressure     = "KubeletHasNoDiskPressure"
	messageNoDiskPressure    = "kubelet has no disk pressure"
	reasonSufficientPID      = "KubeletHasSufficientPID"
	messageSufficientPID     = "kubelet has sufficient PID available"
	registrationConcurrency  = 16
	simulatedOSImage         = "skiff simulated node"
	simulatedKernelVersion   = "6.1.0-simnode"
	simulatedRuntimeVersion  = "sim://1.0.0"
	simulatedOperatingSystem = "linux"
)

// simNode is one simulated node's state. Its addresses are guarded by Simulator.mu; lease and
// nextRenew belong to the heartbeat loop alone.
type simNode struct {
	name   string
	index  int
	hostIP string
	uid    types.UID
	pods   podAddresses

	lease     *coordinationv1.Lease
	nextRenew int64 // unix nanoseconds
}

// NodeName is the name of the simulated node with the given index.
func NodeName(prefix string, index int) string {
	return prefix + strconv.Itoa(index)
}

// nodeObject is the Node the kubelet of n would register.
func (s *Simulator) nodeObject(n *simNode) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:      n.name,
		corev1.LabelOSStable:      simulatedOperatingSystem,
		corev1.LabelArchStable:    runtime.GOARCH,
		"beta.kubernetes.io/os":   simulatedOperatingSystem,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	maps.Copy(labels, s.cfg.Labels)
	now := metav1.NewTime(s.cfg.Clock.Now())
	condition := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: message,
			LastHeartbeatTime: now, LastTransitionTime: now}
	}
	id := machineID(n.name)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   n.name,
			Labels: labels,
			Annotations: map[string]string{
				SimulatedAnnotation:            "true",
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{Taints: slices.Clone(s.cfg.Taints)},
		Status: corev1.NodeStatus{
			Capacity:    s.cfg.Capacity.DeepCopy(),
			Allocatable: s.cfg.Capacity.DeepCopy(),
			Phase:       "",
			Conditions: []corev1.NodeCondition{
				condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, reasonSufficientMemory, messageSufficientMemory),
				condition(corev1.NodeDiskPressure, corev1.ConditionFalse, reasonNoDiskPressure, messageNoDiskPressure),
				condition(corev1.NodePIDPressure, corev1.ConditionFalse, reasonSufficientPID, messageSufficientPID),
				condition(corev1.NodeReady, corev1.ConditionTrue, reasonKubeletReady, messageKubeletReady),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: n.hostIP},
				{Type: corev1.NodeHostName, Address: n.name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: kubeletPort}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               id,
				SystemUUID:              id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:32],
				BootID:                  machineID("boot/" + n.name),
				KernelVersion:           simulatedKernelVersion,
				OSImage:                 simulatedOSImage,
				ContainerRuntimeVersion: simulatedRuntimeVersion,
				KubeletVersion:          s.cfg.KubeletVersion,
				OperatingSystem:         simulatedOperatingSystem,
				Architecture:            runtime.GOARCH,
			},
		},
	}
}

// machineID derives a stable 32-hex-digit identifier from a name.
func machineID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

// registerNodes creates every Node and its Lease, a bounded number at a time.
func (s *Simulator) registerNodes(ctx context.Context) error {
	work := make(chan *simNode)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(registrationConcurrency, len(s.nodes)) {
		wg.Go(func() {
			for n := range work {
				if err := s.registerNode(ctx, n); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range s.nodes {
		if ctx.Err() != nil {
			break
		}
		work <- n
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// registerNode creates n's Node, or, when it exists already (a simulator restarted), reports this
// simulator's status on it while keeping its spec, as a restarted kubelet does.
func (s *Simulator) registerNode(ctx context.Context, n *simNode) error {
	nodes := s.cfg.Client.CoreV1().Nodes()
	want := s.nodeObject(n)
	created, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := nodes.Get(ctx, n.name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("get existing node %s: %w", n.name, getErr)
		}
		existing = existing.DeepCopy()
		existing.Status = want.Status
		created, err = nodes.UpdateStatus(ctx, existing, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", n.name, err)
	}
	n.uid = created.UID
	// Usually the Lease does not exist yet: create it without looking first.
	lease, err := s.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx,
		s.leaseObject(n, metav1.NewMicroTime(s.cfg.Clock.Now())), metav1.CreateOptions{})
	switch {
	case err == nil:
		n.lease = lease
		return nil
	case apierrors.IsAlreadyExists(err):
		return s.renewLease(ctx, n)
	default:
		return fmt.Errorf("create lease for node %s: %w", n.name, err)
	}
}

// renewLease creates or renews n's Lease. The Lease last written is kept, so a renewal is a single
// write; a conflict or a missing Lease costs one more round trip.
func (s *Simulator) renewLease(ctx context.Context, n *simNode) error {
	leases := s.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(s.cfg.Clock.Now())
	if n.lease == nil {
		existing, err := leases.Get(ctx, n.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			lease := s.leaseObject(n, now)
			created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create lease for node %s: %w", n.name, err)
			}
			n.lease = created
			return nil
		case err != nil:
			return fmt.Errorf("get lease of node %s: %w", n.name, err)
		}
		n.lease = existing.DeepCopy()
	}
	lease := n.lease
	lease.Spec.HolderIdentity = ptr.To(n.name)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(s.cfg.LeaseDuration.Seconds()))
	lease.Spec.RenewTime = &now
	if len(lease.OwnerReferences) == 0 && n.uid != "" {
		lease.OwnerReferences = s.leaseObject(n, now).OwnerReferences
	}
	updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		// Forget the copy: the next renewal starts from what the server has.
		n.lease = nil
		return fmt.Errorf("renew lease of node %s: %w", n.name, err)
	}
	n.lease = updated
	return nil
}

func (s *Simulator) leaseObject(n *simNode, now metav1.MicroTime) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(n.name),
			LeaseDurationSeconds: ptr.To(int32(s.cfg.LeaseDuration.Seconds())),
			RenewTime:            &now,
		},
	}
	if n.uid != "" {
		// The Lease goes away with its Node, as the kubelet arranges.
		lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.name, UID: n.uid}}
	}
	return lease
}
