// Package volumebinding implements the VolumeBinding plugin, after Kubernetes' plugin of that name:
// a pod's PersistentVolumeClaims decide where it may run, and the chosen node decides where their
// volumes are made.
//
//   - PreFilter rejects pods whose claims are missing, being deleted, or unbound in a class that
//     binds Immediately (the persistentvolume-binder binds those on its own; the pod waits).
//   - Filter keeps the nodes that every bound volume's node affinity allows and where every
//     unbound claim of a WaitForFirstConsumer class either finds an available volume or can be
//     provisioned (the class's allowedTopologies and, for a CSI driver that publishes storage
//     capacity, a CSIStorageCapacity of the class that the node reaches and that holds the claim).
//   - Reserve keeps the chosen node's decisions; PreBind carries them out: it points a chosen
//     static volume at its claim, or sets volume.kubernetes.io/selected-node on a claim to
//     provision, then waits until every claim is Bound before the pod is bound.
//
// Unlike Kubernetes, no in-memory "assume" cache holds volumes picked by pods still binding: two
// pods choosing the same static volume at once conflict on the volume's write in PreBind and the
// loser is retried.
package volumebinding

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/helper"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// Name is the plugin name.
const Name = "VolumeBinding"

// Kubernetes' messages and annotations.
const (
	ErrReasonBindConflict = "node(s) didn't find available persistent volumes to bind"
	ErrReasonNodeConflict = "node(s) had volume node affinity conflict"
	ErrReasonPVNotExist   = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	// ErrReasonNotEnoughSpace: no CSIStorageCapacity the node reaches holds a claim to provision.
	ErrReasonNotEnoughSpace = "node(s) did not have enough free storage"
	ErrUnboundImmediate     = "pod has unbound immediate PersistentVolumeClaims"

	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// noProvisioner marks classes of statically provisioned volumes only.
	noProvisioner = "kubernetes.io/no-provisioner"
)

// Args are the plugin's pluginConfig arguments, as Kubernetes' VolumeBindingArgs.
type Args struct {
	// BindTimeoutSeconds bounds PreBind's wait for claims to bind (default 600).
	BindTimeoutSeconds *int64 `json:"bindTimeoutSeconds,omitempty"`
}

const stateKey framework.StateKey = "PreFilter" + Name

// claimInfo is one claim of the pod, as PreFilter saw it.
type claimInfo struct {
	claim *v1.PersistentVolumeClaim
	class *storagev1.StorageClass // nil for bound claims
	// capacities, when not nil, are the CSIStorageCapacities of the class: its provisioner is a
	// CSI driver that publishes capacity (storageCapacity: true), so a node may provision the claim
	// only where one of them holds it.
	capacities []*storagev1.CSIStorageCapacity
}

// nodeDecision is what binding the pod to one node needs done.
type nodeDecision struct {
	// static maps claims (namespace/name) to the available volume chosen for them.
	static map[string]*v1.PersistentVolume
	// provision lists the claims to provision on the node.
	provision []*v1.PersistentVolumeClaim
}

type stateData struct {
	bound   []*v1.PersistentVolume // volumes of bound claims
	unbound []claimInfo            // claims waiting for the first consumer
	volumes []*v1.PersistentVolume // every volume, for static matching

	mu        sync.Mutex
	decisions map[string]*nodeDecision // by node name, written by Filter (in parallel)
	chosen    *nodeDecision            // set by Reserve
}

// Clone shares the state: Filter writes only per-node entries under the lock, and preemption's
// simulations decide the same way on any node.
func (s *stateData) Clone() framework.StateData { return s }

// VolumeBinding is the plugin.
type VolumeBinding struct {
	client      kubernetes.Interface
	pvcLister   corelisters.PersistentVolumeClaimLister
	pvLister    corelisters.PersistentVolumeLister
	classLister storagelisters.StorageClassLister
	// driverLister and capacityLister read CSIDrivers and CSIStorageCapacities, for storage
	// capacity scheduling.
	driverLister   storagelisters.CSIDriverLister
	capacityLister storagelisters.CSIStorageCapacityLister
	bindTimeout    time.Duration
	// pollInterval is how often PreBind looks at the claims it waits for (from the informer cache).
	pollInterval time.Duration
}

var (
	_ framework.PreFilterPlugin   = &VolumeBinding{}
	_ framework.FilterPlugin      = &VolumeBinding{}
	_ framework.ReservePlugin     = &VolumeBinding{}
	_ framework.PreBindPlugin     = &VolumeBinding{}
	_ framework.EnqueueExtensions = &VolumeBinding{}
)

// New builds the plugin; its listers register their informers with the scheduler's factory.
func New(raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	args := Args{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("decode %s args: %w", Name, err)
		}
	}
	timeout := int64(600)
	if args.BindTimeoutSeconds != nil {
		if *args.BindTimeoutSeconds < 0 {
			return nil, fmt.Errorf("%s args: bindTimeoutSeconds must not be negative", Name)
		}
		timeout = *args.BindTimeoutSeconds
	}
	b := &VolumeBinding{client: h.ClientSet(), bindTimeout: time.Duration(timeout) * time.Second, pollInterval: time.Second}
	// A framework built only to list its plugins has no informers; such a plugin refuses pods
	// with claims rather than guess.
	if f := h.SharedInformerFactory(); f != nil {
		b.pvcLister = f.Core().V1().PersistentVolumeClaims().Lister()
		b.pvLister = f.Core().V1().PersistentVolumes().Lister()
		b.classLister = f.Storage().V1().StorageClasses().Lister()
		b.driverLister = f.Storage().V1().CSIDrivers().Lister()
		b.capacityLister = f.Storage().V1().CSIStorageCapacities().Lister()
	}
	return b, nil
}

// Name returns the plugin name.
func (*VolumeBinding) Name() string { return Name }

// PreFilter reads the pod's claims and their volumes and classes.
func (b *VolumeBinding) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ framework.NodeInfoLister) *framework.Status {
	names := volumeutil.PodClaimNames(pod)
	if len(names) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	if b.pvcLister == nil {
		return framework.AsStatus(fmt.Errorf("%s: no informers to read claims from", Name))
	}
	s := &stateData{decisions: map[string]*nodeDecision{}}
	immediate := false
	for _, name := range names {
		pvc, err := b.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		}
		if err != nil {
			return framework.AsStatus(err)
		}
		if pvc.DeletionTimestamp != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if pvc.Spec.VolumeName != "" {
			pv, err := b.pvLister.Get(pvc.Spec.VolumeName)
			if apierrors.IsNotFound(err) {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPVNotExist)
			}
			if err != nil {
				return framework.AsStatus(err)
			}
			s.bound = append(s.bound, pv)
			continue
		}
		className := ""
		if pvc.Spec.StorageClassName != nil {
			className = *pvc.Spec.StorageClassName
		}
		var class *storagev1.StorageClass
		if className != "" {
			// A class that does not exist binds like Immediate: the persistentvolume-binder binds
			// such claims to matching volumes on its own, and the pod waits for that.
			class, err = b.classLister.Get(className)
			if err != nil && !apierrors.IsNotFound(err) {
				return framework.AsStatus(err)
			}
		}
		if class == nil || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			immediate = true
			continue
		}
		capacities, err := b.classCapacities(class)
		if err != nil {
			return framework.AsStatus(err)
		}
		s.unbound = append(s.unbound, claimInfo{claim: pvc, class: class, capacities: capacities})
	}
	if immediate {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrUnboundImmediate)
	}
	if len(s.unbound) > 0 {
		pvs, err := b.pvLister.List(labels.Everything())
		if err != nil {
			return framework.AsStatus(err)
		}
		s.volumes = pvs
	}
	state.Write(stateKey, s)
	return nil
}

// classCapacities are the CSIStorageCapacities of class when its provisioner is a CSI driver that
// publishes them (nil otherwise: the capacity is not checked), as upstream opts drivers in.
func (b *VolumeBinding) classCapacities(class *storagev1.StorageClass) ([]*storagev1.CSIStorageCapacity, error) {
	if b.driverLister == nil || b.capacityLister == nil {
		return nil, nil
	}
	driver, err := b.driverLister.Get(class.Provisioner)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if driver.Spec.StorageCapacity == nil || !*driver.Spec.StorageCapacity {
		return nil, nil
	}
	all, err := b.capacityLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := []*storagev1.CSIStorageCapacity{}
	for _, c := range all {
		if c.StorageClassName == class.Name {
			out = append(out, c)
		}
	}
	return out, nil
}

func readState(state *framework.CycleState) (*stateData, error) {
	d, err := state.Read(stateKey)
	if err != nil {
		return nil, err
	}
	s, ok := d.(*stateData)
	if !ok {
		return nil, fmt.Errorf("%s: cycle state holds %T", Name, d)
	}
	return s, nil
}

// Filter checks the pod's volumes against one node and records what binding there would need.
func (b *VolumeBinding) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := readState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	decision, reasons := decide(node, s.bound, s.unbound, s.volumes)
	if len(reasons) > 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
	}
	s.mu.Lock()
	s.decisions[node.Name] = decision
	s.mu.Unlock()
	return nil
}

// decide is the pure core of Filter: whether the pod's volumes allow node, and if so which
// available volume each waiting claim takes and which claims are provisioned there.
func decide(node *v1.Node, bound []*v1.PersistentVolume, unbound []claimInfo, volumes []*v1.PersistentVolume) (*nodeDecision, []string) {
	var reasons []string
	for _, pv := range bound {
		if !volumeAllows(pv, node) {
			reasons = append(reasons, ErrReasonNodeConflict)
			break
		}
	}
	d := &nodeDecision{static: map[string]*v1.PersistentVolume{}}
	taken := map[string]bool{}
	for _, c := range unbound {
		if selected := c.claim.Annotations[AnnSelectedNode]; selected != "" {
			// Provisioning already started for a node: the volume will be there or nowhere.
			if selected != node.Name {
				reasons = append(reasons, ErrReasonBindConflict)
				break
			}
			d.provision = append(d.provision, c.claim)
			continue
		}
		if pv := findVolume(c.claim, volumes, node, taken); pv != nil {
			taken[pv.Name] = true
			d.static[c.claim.Namespace+"/"+c.claim.Name] = pv
			continue
		}
		if c.class.Provisioner == noProvisioner || !topologyAllows(c.class.AllowedTopologies, node) {
			reasons = append(reasons, ErrReasonBindConflict)
			break
		}
		if !capacityAllows(c, node) {
			reasons = append(reasons, ErrReasonNotEnoughSpace)
			break
		}
		d.provision = append(d.provision, c.claim)
	}
	if len(reasons) > 0 {
		return nil, reasons
	}
	return d, nil
}

func volumeAllows(pv *v1.PersistentVolume, node *v1.Node) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return true
	}
	return helper.NodeSelectorMatches(pv.Spec.NodeAffinity.Required, node)
}

// topologyAllows: no terms allow every node; otherwise one term's every label must match.
func topologyAllows(terms []v1.TopologySelectorTerm, node *v1.Node) bool {
	if len(terms) == 0 {
		return true
	}
	for _, term := range terms {
		ok := true
		for _, e := range term.MatchLabelExpressions {
			value, has := node.Labels[e.Key]
			if !has || !slices.Contains(e.Values, value) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// capacityAllows: the claim's class publishes no capacity, the claim asks for no size, or one of the
// class's CSIStorageCapacities reaches the node (its nodeTopology selects the node's labels; none
// reaches no node) and holds the request (maximumVolumeSize when set, else capacity), as upstream.
func capacityAllows(c claimInfo, node *v1.Node) bool {
	want, ok := c.claim.Spec.Resources.Requests[v1.ResourceStorage]
	if c.capacities == nil || !ok {
		return true
	}
	for _, capacity := range c.capacities {
		limit := capacity.Capacity
		if capacity.MaximumVolumeSize != nil {
			limit = capacity.MaximumVolumeSize
		}
		if limit == nil || limit.Value() < want.Value() || capacity.NodeTopology == nil {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(capacity.NodeTopology)
		if err == nil && selector.Matches(labels.Set(node.Labels)) {
			return true
		}
	}
	return false
}

// findVolume picks the smallest available volume for the claim on node: its class, access modes,
// volume mode, selector and size, not taken by another claim of this pod. A volume pre-bound to
// this claim wins.
func findVolume(pvc *v1.PersistentVolumeClaim, volumes []*v1.PersistentVolume, node *v1.Node, taken map[string]bool) *v1.PersistentVolume {
	var best *v1.PersistentVolume
	for _, pv := range volumes {
		if taken[pv.Name] || pv.DeletionTimestamp != nil || !volumeAllows(pv, node) {
			continue
		}
		if ref := pv.Spec.ClaimRef; ref != nil {
			if ref.Namespace == pvc.Namespace && ref.Name == pvc.Name && (ref.UID == "" || ref.UID == pvc.UID) {
				return pv
			}
			continue
		}
		if !fits(pvc, pv) {
			continue
		}
		if best == nil {
			best = pv
			continue
		}
		have, cur := pv.Spec.Capacity[v1.ResourceStorage], best.Spec.Capacity[v1.ResourceStorage]
		if have.Cmp(cur) < 0 {
			best = pv
		}
	}
	return best
}

func fits(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) bool {
	if pv.Status.Phase != "" && pv.Status.Phase != v1.VolumeAvailable && pv.Status.Phase != v1.VolumePending {
		return false
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != pv.Spec.StorageClassName {
		return false
	}
	if pvc.Spec.VolumeName != "" && pvc.Spec.VolumeName != pv.Name {
		return false
	}
	return volumeutil.SpecFits(pvc, pv)
}

// Reserve keeps the decision made for the chosen node.
func (b *VolumeBinding) Reserve(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeName string) *framework.Status {
	s, err := readState(state)
	if err != nil {
		// PreFilter skipped: the pod has no claims.
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chosen = s.decisions[nodeName]
	return nil
}

// Unreserve forgets the decision; writes PreBind already made stay, as in Kubernetes (a claim
// annotated for a node keeps the pod there on its next attempt).
func (b *VolumeBinding) Unreserve(_ context.Context, state *framework.CycleState, _ *v1.Pod, _ string) {
	if s, err := readState(state); err == nil {
		s.mu.Lock()
		s.chosen = nil
		s.mu.Unlock()
	}
}

// PreBind binds the chosen static volumes, asks for the rest to be provisioned on the node, and
// waits until every claim of the pod is bound.
func (b *VolumeBinding) PreBind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	s, err := readState(state)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	d := s.chosen
	s.mu.Unlock()
	if d == nil || (len(d.static) == 0 && len(d.provision) == 0) {
		return nil
	}
	var waitFor []*waitingClaim
	for _, c := range s.unbound {
		pvc := c.claim
		key := pvc.Namespace + "/" + pvc.Name
		if pv, ok := d.static[key]; ok {
			if err := b.claimVolume(ctx, pv, pvc); err != nil {
				return framework.AsStatus(err)
			}
			waitFor = append(waitFor, &waitingClaim{claim: pvc})
			continue
		}
		written, err := b.selectNode(ctx, pvc, nodeName)
		if err != nil {
			return framework.AsStatus(err)
		}
		waitFor = append(waitFor, &waitingClaim{claim: pvc, provisioned: true, written: written})
	}
	ctx, cancel := context.WithTimeout(ctx, b.bindTimeout)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, b.pollInterval, true, func(context.Context) (bool, error) {
		return b.allBound(waitFor)
	})
	if err != nil {
		return framework.AsStatus(fmt.Errorf("binding volumes of %s/%s: %w", pod.Namespace, pod.Name, err))
	}
	return nil
}

// claimVolume points an available volume at the claim (the volume's claimRef is the lock); the
// persistentvolume-binder then completes the binding on both sides.
func (b *VolumeBinding) claimVolume(ctx context.Context, pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) error {
	if ref := pv.Spec.ClaimRef; ref != nil && ref.UID == pvc.UID {
		return nil
	}
	next := pv.DeepCopy()
	next.Spec.ClaimRef = &v1.ObjectReference{
		Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name,
		UID: pvc.UID, ResourceVersion: pvc.ResourceVersion,
	}
	if _, err := b.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("bind volume %s to claim %s/%s: %w", pv.Name, pvc.Namespace, pvc.Name, err)
	}
	return nil
}

// selectNode sets volume.kubernetes.io/selected-node, which tells the claim's provisioner where
// to make the volume, and returns the resourceVersion of the claim that says so.
func (b *VolumeBinding) selectNode(ctx context.Context, pvc *v1.PersistentVolumeClaim, nodeName string) (string, error) {
	if pvc.Annotations[AnnSelectedNode] == nodeName {
		return pvc.ResourceVersion, nil
	}
	next := pvc.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[AnnSelectedNode] = nodeName
	updated, err := b.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return "", fmt.Errorf("select node %s for claim %s/%s: %w", nodeName, pvc.Namespace, pvc.Name, err)
	}
	return updated.ResourceVersion, nil
}

// waitingClaim is a claim PreBind waits for.
type waitingClaim struct {
	claim *v1.PersistentVolumeClaim
	// provisioned: PreBind asked for a volume on the node; seenSelected: the cache has shown the
	// claim with that request since.
	provisioned, seenSelected bool
	// written is the resourceVersion of PreBind's request (empty: unknown).
	written string
}

// allBound reports whether every claim is bound, reading the informer cache. A claim deleted and
// made again under the same name, or one whose provisioner handed it back (it removed
// volume.kubernetes.io/selected-node after the cache had shown it, or the cache shows a version
// no older than PreBind's request without it: a provisioner that fails at once may remove it
// before the cache ever shows it), fails the wait so that the pod is scheduled again.
func (b *VolumeBinding) allBound(claims []*waitingClaim) (bool, error) {
	for _, w := range claims {
		c := w.claim
		pvc, err := b.pvcLister.PersistentVolumeClaims(c.Namespace).Get(c.Name)
		if err != nil {
			return false, fmt.Errorf("claim %s/%s: %w", c.Namespace, c.Name, err)
		}
		if pvc.UID != c.UID {
			return false, fmt.Errorf("claim %s/%s was recreated", c.Namespace, c.Name)
		}
		if pvc.Spec.VolumeName != "" && pvc.Status.Phase == v1.ClaimBound {
			continue
		}
		if w.provisioned && pvc.Spec.VolumeName == "" {
			selected := pvc.Annotations[AnnSelectedNode] != ""
			if !selected && (w.seenSelected || versionAtLeast(pvc.ResourceVersion, w.written)) {
				return false, fmt.Errorf("provisioning of claim %s/%s failed: selected-node annotation reset", c.Namespace, c.Name)
			}
			w.seenSelected = w.seenSelected || selected
		}
		return false, nil
	}
	return true, nil
}

// versionAtLeast reports whether resourceVersion a is b or later. Versions are opaque to clients
// but are etcd revisions, which Kubernetes' scheduler compares as numbers for its assumed claims
// too; what does not parse is never later.
func versionAtLeast(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x >= y
}

// EventsToRegister: claims, volumes, classes, CSI drivers and storage capacities appearing or
// changing, and new or relabelled nodes.
func (*VolumeBinding) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.KindPersistentVolumeClaim, ActionType: framework.Add | framework.Update},
		{Resource: framework.KindPersistentVolume, ActionType: framework.Add | framework.Update},
		{Resource: framework.KindStorageClass, ActionType: framework.Add | framework.Update},
		{Resource: framework.KindCSIDriver, ActionType: framework.Add | framework.Update},
		{Resource: framework.KindCSIStorageCapacity, ActionType: framework.Add | framework.Update},
		{Resource: framework.KindNode, ActionType: framework.Add | framework.Update},
	}
}
