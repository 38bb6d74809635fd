package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/volumeutil"
)

const (
	roleLabelPrefix = "node-role.kubernetes.io/"

	// Condition reasons and messages as the Kubernetes kubelet writes them.
	reasonReady            = "KubeletReady"
	messageReady           = "kubelet is posting ready status"
	reasonNotReady         = "KubeletNotReady"
	reasonSufficientMemory = "KubeletHasSufficientMemory"
	messageSufficientMem   = "kubelet has sufficient memory available"
	reasonNoDiskPressure   = "KubeletHasNoDiskPressure"
	messageNoDiskPressure  = "kubelet has no disk pressure"
	reasonSufficientPID    = "KubeletHasSufficientPID"
	messageSufficientPID   = "kubelet has sufficient PID available"

	maxImagesInNodeStatus = 50
)

// nodeLabels returns the labels the kubelet owns on its Node.
func (n *nodeStatus) nodeLabels() map[string]string {
	labels := map[string]string{
		corev1.LabelHostname:   n.cfg.NodeName,
		corev1.LabelOSStable:   n.machine.OperatingSystem,
		corev1.LabelArchStable: n.machine.Architecture,
	}
	for _, role := range n.cfg.Roles {
		labels[roleLabelPrefix+role] = ""
	}
	for key, v := range n.cfg.Labels {
		labels[key] = v
	}
	return labels
}

func (n *nodeStatus) nodeAddresses() []corev1.NodeAddress {
	if len(n.cfg.Addresses) > 0 {
		return slices.Clone(n.cfg.Addresses)
	}
	var out []corev1.NodeAddress
	if n.machine.PrimaryIP != "" {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: n.machine.PrimaryIP})
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.cfg.NodeName})
}

// capacity returns the node's capacity and allocatable (capacity minus
// system-reserved, never below zero).
func (n *nodeStatus) capacity() (corev1.ResourceList, corev1.ResourceList) {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(n.machine.CPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(n.machine.MemoryBytes, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(n.machine.EphemeralBytes, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(int64(n.cfg.MaxPods), resource.DecimalSI),
		"hugepages-1Gi":                 *resource.NewQuantity(0, resource.DecimalSI),
		"hugepages-2Mi":                 *resource.NewQuantity(0, resource.DecimalSI),
	}
	allocatable := corev1.ResourceList{}
	for name, q := range capacity {
		a := q.DeepCopy()
		if reserved, ok := n.cfg.SystemReserved[name]; ok {
			a.Sub(reserved)
			if a.Sign() < 0 {
				a = *resource.NewQuantity(0, q.Format)
			}
		}
		allocatable[name] = a
	}
	return capacity, allocatable
}

// runtimeReadiness turns the CRI status into the Ready condition's status
// and message.
func runtimeReadiness(status *runtimeapi.RuntimeStatus, err error) (bool, string) {
	if err != nil {
		return false, fmt.Sprintf("container runtime is down: %v", err)
	}
	var problems []string
	for _, want := range []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady} {
		found := false
		for _, c := range status.GetConditions() {
			if c.Type != want {
				continue
			}
			found = true
			if !c.Status {
				kind := "container runtime"
				if want == runtimeapi.NetworkReady {
					kind = "container runtime network"
				}
				problems = append(problems, fmt.Sprintf("%s not ready: %s=false reason:%s message:%s", kind, want, c.Reason, c.Message))
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("container runtime status check may not have completed yet: %s missing", want))
		}
	}
	if len(problems) > 0 {
		return false, strings.Join(problems, ", ")
	}
	return true, ""
}

// keepExtendedResources carries the extended resources others advertise in the Node's capacity
// (a device plugin's, or a patch of the Node's status, as e2e's scheduler specs make) into the
// capacity and allocatable the kubelet writes, as Kubernetes' kubelet keeps them: its own status
// would otherwise take them away again, and nothing could be scheduled on them.
func keepExtendedResources(previous, capacity, allocatable corev1.ResourceList) {
	for name, q := range previous {
		if isExtendedResourceName(name) {
			capacity[name] = q.DeepCopy()
			allocatable[name] = q.DeepCopy()
		}
	}
}

// isExtendedResourceName is Kubernetes' rule: a domain-prefixed name outside kubernetes.io that
// is not a quota's requests. name.
func isExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}

// desiredNodeStatus computes the node's status; conditions keep their
// transition time from previous when their status did not change.
func (n *nodeStatus) desiredNodeStatus(ctx context.Context, previous *corev1.NodeStatus) corev1.NodeStatus {
	now := metav1.NewTime(n.clock.Now())
	capacity, allocatable := n.capacity()
	runtimeVersion := "unknown"
	if v, err := n.runtime.Version(ctx); err == nil {
		runtimeVersion = v.RuntimeName + "://" + v.RuntimeVersion
	}
	ready, notReadyMessage := runtimeReadiness(n.runtime.Status(ctx))
	readyCondition := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: reasonReady, Message: messageReady}
	if !ready {
		readyCondition = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: reasonNotReady, Message: notReadyMessage}
	}
	conditions := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: reasonSufficientMemory, Message: messageSufficientMem},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: reasonNoDiskPressure, Message: messageNoDiskPressure},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: reasonSufficientPID, Message: messageSufficientPID},
		readyCondition,
	}
	for i := range conditions {
		c := &conditions[i]
		c.LastHeartbeatTime = now
		c.LastTransitionTime = now
		if previous == nil {
			continue
		}
		for _, old := range previous.Conditions {
			if old.Type == c.Type && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	if previous != nil {
		keepExtendedResources(previous.Capacity, capacity, allocatable)
	}
	status := corev1.NodeStatus{
		Capacity:        capacity,
		Allocatable:     allocatable,
		Conditions:      conditions,
		Addresses:       n.nodeAddresses(),
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: n.cfg.Port}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               n.machine.MachineID,
			SystemUUID:              n.machine.SystemUUID,
			BootID:                  n.machine.BootID,
			KernelVersion:           n.machine.KernelVersion,
			OSImage:                 n.machine.OSImage,
			ContainerRuntimeVersion: runtimeVersion,
			KubeletVersion:          n.cfg.KubeletVersion,
			OperatingSystem:         n.machine.OperatingSystem,
			Architecture:            n.machine.Architecture,
		},
		Images: n.nodeImages(ctx),
	}
	if previous != nil {
		status.Phase = previous.Phase
		// volumesAttached is the attach/detach controller's to write.
		status.VolumesAttached = previous.VolumesAttached
	}
	status.VolumesInUse = n.volumes.csiVolumesInUse()
	return status
}

func (n *nodeStatus) nodeImages(ctx context.Context) []corev1.ContainerImage {
	imgs, err := n.runtime.ListImages(ctx, nil)
	if err != nil {
		return nil
	}
	slices.SortStableFunc(imgs, func(a, b *runtimeapi.Image) int { return int(b.Size - a.Size) })
	var out []corev1.ContainerImage
	for _, img := range imgs {
		names := append(slices.Clone(img.RepoDigests), img.RepoTags...)
		if len(names) == 0 {
			continue
		}
		out = append(out, corev1.ContainerImage{Names: names, SizeBytes: int64(img.Size)})
		if len(out) == maxImagesInNodeStatus {
			break
		}
	}
	return out
}

// sameNodeStatus compares statuses ignoring heartbeat times, which change
// at every computation.
func sameNodeStatus(a, b corev1.NodeStatus) bool {
	strip := func(s corev1.NodeStatus) corev1.NodeStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// registerNode creates the Node, or adopts an existing one (a restart, or a
// node re-joining) by merging the kubelet-owned labels into it.
func (n *nodeStatus) registerNode(ctx context.Context) (*corev1.Node, error) {
	// The attach/detach controller attaches volumes only to nodes whose kubelet says it leaves
	// that to the controller, as Kubernetes' kubelet does by default.
	annotations := map[string]string{volumeutil.AnnControllerManagedAttachDetach: "true"}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.cfg.NodeName, Labels: n.nodeLabels(), Annotations: annotations},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(n.cfg.Taints)},
	}
	if len(n.cfg.PodCIDRs) > 0 {
		node.Spec.PodCIDR = n.cfg.PodCIDRs[0]
		node.Spec.PodCIDRs = slices.Clone(n.cfg.PodCIDRs)
	}
	created, err := n.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		n.log.Info("node registered", "node", n.cfg.NodeName)
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("register node %s: %w", n.cfg.NodeName, err)
	}
	existing, err := n.client.CoreV1().Nodes().Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("register node %s: get existing: %w", n.cfg.NodeName, err)
	}
	missing, missingAnn := missingEntries(existing.Labels, node.Labels), missingEntries(existing.Annotations, annotations)
	if len(missing) == 0 && len(missingAnn) == 0 {
		return existing, nil
	}
	meta := map[string]any{}
	if len(missing) > 0 {
		meta["labels"] = missing
	}
	if len(missingAnn) > 0 {
		meta["annotations"] = missingAnn
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, err
	}
	updated, err := n.client.CoreV1().Nodes().Patch(ctx, n.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("register node %s: update labels: %w", n.cfg.NodeName, err)
	}
	return updated, nil
}

// missingEntries are the entries of want that have does not hold with the same value.
func missingEntries(have, want map[string]string) map[string]string {
	out := map[string]string{}
	for key, v := range want {
		if got, ok := have[key]; !ok || got != v {
			out[key] = v
		}
	}
	return out
}

// postNodeStatus writes status to the node's status subresource as a
// strategic merge patch, the way the Kubernetes kubelet does.
func (n *nodeStatus) postNodeStatus(ctx context.Context, node *corev1.Node, status corev1.NodeStatus) (*corev1.Node, error) {
	oldData, err := json.Marshal(corev1.Node{Status: node.Status})
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(corev1.Node{Status: status})
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node status patch: %w", err)
	}
	updated, err := n.client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("post node status of %s: %w", node.Name, err)
	}
	return updated, nil
}
