// Package volumerestrictions implements the VolumeRestrictions filter's ReadWriteOncePod rule,
// after Kubernetes' plugin of that name: a claim with the ReadWriteOncePod access mode is used by
// one pod in the whole cluster, so a pod naming such a claim that a pod on any node already uses
// fits nowhere ("node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod
// access mode"). Preemption may evict that user: AddPod and RemovePod keep the count for its
// simulations. The plugin's other rule, conflicts between in-tree inline disks (GCE PD, AWS EBS,
// iSCSI, RBD), has nothing to judge in skiff, whose kubelet mounts none of them.
package volumerestrictions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Name is the plugin name.
const Name = "VolumeRestrictions"

// ErrReasonReadWriteOncePodConflict is Kubernetes' message.
const ErrReasonReadWriteOncePodConflict = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"

const stateKey framework.StateKey = "PreFilter" + Name

// preFilterState is the pod's ReadWriteOncePod claims and how many uses of them other pods make.
type preFilterState struct {
	namespace string
	claims    sets.Set[string]
	conflicts int
}

func (s *preFilterState) Clone() framework.StateData {
	c := *s
	return &c
}

// uses counts the references pod makes to the state's claims.
func (s *preFilterState) uses(pod *v1.Pod) int {
	if pod.Namespace != s.namespace {
		return 0
	}
	n := 0
	for i := range pod.Spec.Volumes {
		if c := pod.Spec.Volumes[i].PersistentVolumeClaim; c != nil && s.claims.Has(c.ClaimName) {
			n++
		}
	}
	return n
}

// VolumeRestrictions is the plugin.
type VolumeRestrictions struct {
	pvcLister corelisters.PersistentVolumeClaimLister
}

var (
	_ framework.PreFilterPlugin   = &VolumeRestrictions{}
	_ framework.PreFilterExtender = &VolumeRestrictions{}
	_ framework.FilterPlugin      = &VolumeRestrictions{}
	_ framework.EnqueueExtensions = &VolumeRestrictions{}
)

// New builds the plugin; its lister registers its informer with the scheduler's factory.
func New(_ json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	pl := &VolumeRestrictions{}
	// A framework built only to list its plugins has no informers; it judges no claim.
	if f := h.SharedInformerFactory(); f != nil {
		pl.pvcLister = f.Core().V1().PersistentVolumeClaims().Lister()
	}
	return pl, nil
}

// Name returns the plugin name.
func (*VolumeRestrictions) Name() string { return Name }

// PreFilter finds the pod's ReadWriteOncePod claims and counts the pods on every node that use
// them; a pod without such claims skips Filter.
func (pl *VolumeRestrictions) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes framework.NodeInfoLister) *framework.Status {
	if pl.pvcLister == nil {
		return framework.NewStatus(framework.Skip)
	}
	claims := sets.New[string]()
	for i := range pod.Spec.Volumes {
		c := pod.Spec.Volumes[i].PersistentVolumeClaim
		if c == nil {
			continue
		}
		pvc, err := pl.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(c.ClaimName)
		if apierrors.IsNotFound(err) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", c.ClaimName))
		}
		if err != nil {
			return framework.AsStatus(err)
		}
		if slices.Contains(pvc.Spec.AccessModes, v1.ReadWriteOncePod) {
			claims.Insert(pvc.Name)
		}
	}
	if claims.Len() == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{namespace: pod.Namespace, claims: claims}
	if nodes != nil {
		for _, ni := range nodes.List() {
			for _, p := range ni.Pods {
				if p.Pod.UID != pod.UID {
					s.conflicts += s.uses(p.Pod)
				}
			}
		}
	}
	state.Write(stateKey, s)
	return nil
}

func readState(state *framework.CycleState) (*preFilterState, error) {
	d, err := state.Read(stateKey)
	if err != nil {
		return nil, err
	}
	s, ok := d.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%s: cycle state holds %T", Name, d)
	}
	return s, nil
}

// PreFilterExtensions keeps the count when preemption adds or removes pods.
func (pl *VolumeRestrictions) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod counts a pod added to a node in a simulation.
func (pl *VolumeRestrictions) AddPod(_ context.Context, state *framework.CycleState, _ *v1.Pod, p *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	s, err := readState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.conflicts += s.uses(p.Pod)
	return nil
}

// RemovePod uncounts a pod a simulation evicts.
func (pl *VolumeRestrictions) RemovePod(_ context.Context, state *framework.CycleState, _ *v1.Pod, p *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	s, err := readState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.conflicts -= s.uses(p.Pod)
	return nil
}

// Filter refuses every node while another pod uses one of the pod's ReadWriteOncePod claims.
func (pl *VolumeRestrictions) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, _ *framework.NodeInfo) *framework.Status {
	s, err := readState(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	if s.conflicts > 0 {
		return framework.NewStatus(framework.Unschedulable, ErrReasonReadWriteOncePodConflict)
	}
	return nil
}

// EventsToRegister: a pod leaving (its claim freed) and a claim appearing.
func (*VolumeRestrictions) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.KindAssignedPod, ActionType: framework.Delete},
		{Resource: framework.KindPersistentVolumeClaim, ActionType: framework.Add},
		{Resource: framework.KindNode, ActionType: framework.Add},
	}
}
