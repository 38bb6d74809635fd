// Package nodevolumelimits implements the NodeVolumeLimits filter for CSI volumes, after
// Kubernetes' plugin of that name: a node takes a pod only if, for every CSI driver, the volumes
// its pods use (and its VolumeAttachments hold) plus the pod's new ones stay within the driver's
// allocatable count in the node's CSINode (what the driver's NodeGetInfo max_volumes_per_node said
// when it registered). A volume several pods share counts once. A claim not bound yet counts
// against its StorageClass's provisioner. Nodes without a CSINode, and drivers without a count,
// have no limit. In-tree volume plugins (and their CSI migration) do not exist in skiff, so only
// CSI volumes count.
package nodevolumelimits

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// Name is the plugin name.
const Name = "NodeVolumeLimits"

// ErrReasonMaxVolumeCountExceeded is Kubernetes' message.
const ErrReasonMaxVolumeCountExceeded = "node(s) exceed max volume count"

// NodeVolumeLimits is the plugin.
type NodeVolumeLimits struct {
	pvcLister     corelisters.PersistentVolumeClaimLister
	pvLister      corelisters.PersistentVolumeLister
	classLister   storagelisters.StorageClassLister
	csiNodeLister storagelisters.CSINodeLister
	vaLister      storagelisters.VolumeAttachmentLister
}

var (
	_ framework.PreFilterPlugin   = &NodeVolumeLimits{}
	_ framework.FilterPlugin      = &NodeVolumeLimits{}
	_ framework.EnqueueExtensions = &NodeVolumeLimits{}
)

// New builds the plugin; its listers register their informers with the scheduler's factory.
func New(_ json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	pl := &NodeVolumeLimits{}
	// A framework built only to list its plugins has no informers; its Filter counts nothing.
	if f := h.SharedInformerFactory(); f != nil {
		pl.pvcLister = f.Core().V1().PersistentVolumeClaims().Lister()
		pl.pvLister = f.Core().V1().PersistentVolumes().Lister()
		pl.classLister = f.Storage().V1().StorageClasses().Lister()
		pl.csiNodeLister = f.Storage().V1().CSINodes().Lister()
		pl.vaLister = f.Storage().V1().VolumeAttachments().Lister()
	}
	return pl, nil
}

// Name returns the plugin name.
func (*NodeVolumeLimits) Name() string { return Name }

// PreFilter skips pods that use no claim (directly or through a generic ephemeral volume): only
// those can hold a CSI volume that counts.
func (pl *NodeVolumeLimits) PreFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ framework.NodeInfoLister) *framework.Status {
	if len(volumeutil.PodClaimNames(pod)) == 0 || pl.pvcLister == nil {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}

// Filter counts the node's CSI volumes per driver against its CSINode's limits.
func (pl *NodeVolumeLimits) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	node := ni.Node()
	csiNode, err := pl.csiNodeLister.Get(node.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return framework.AsStatus(err)
	}
	limits := Limits(csiNode)
	if len(limits) == 0 {
		return nil
	}
	added := map[string]string{}
	if err := pl.podVolumes(pod, true, added); err != nil {
		if apierrors.IsNotFound(err) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
		}
		return framework.AsStatus(err)
	}
	if len(added) == 0 {
		return nil
	}
	used := map[string]string{}
	for _, p := range ni.Pods {
		if err := pl.podVolumes(p.Pod, false, used); err != nil {
			return framework.AsStatus(err)
		}
	}
	attached, err := pl.attachedVolumes(node.Name)
	if err != nil {
		return framework.AsStatus(err)
	}
	if Exceeds(added, used, attached, limits) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonMaxVolumeCountExceeded)
	}
	return nil
}

// Limits are the allocatable volume counts per driver of a CSINode (none without one).
func Limits(csiNode *storagev1.CSINode) map[string]int64 {
	out := map[string]int64{}
	if csiNode == nil {
		return out
	}
	for _, d := range csiNode.Spec.Drivers {
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			out[d.Name] = int64(*d.Allocatable.Count)
		}
	}
	return out
}

// Exceeds reports whether a node goes over a driver's limit when it takes the volumes added to
// those its pods use and its attachments hold (each map: volume's unique name -> driver). A volume
// already on the node adds nothing; a driver without a limit is never over. It is pure.
func Exceeds(added, used, attached map[string]string, limits map[string]int64) bool {
	count := map[string]int64{}
	for _, driver := range used {
		count[driver]++
	}
	for id, driver := range attached {
		if _, ok := used[id]; !ok {
			count[driver]++
		}
	}
	adding := map[string]int64{}
	for id, driver := range added {
		if _, ok := used[id]; ok {
			continue
		}
		adding[driver]++
	}
	for driver, n := range adding {
		if limit, ok := limits[driver]; ok && count[driver]+n > limit {
			return true
		}
	}
	return false
}

// podVolumes adds the CSI volumes of pod's claims to out (unique name -> driver). For the pod being
// scheduled (newPod) a missing claim, or an ephemeral volume's claim it does not own, is an error
// (the pod cannot run); for pods on the node such claims are skipped, as upstream counts them.
func (pl *NodeVolumeLimits) podVolumes(pod *v1.Pod, newPod bool, out map[string]string) error {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		var name string
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			name = volumeutil.EphemeralClaimName(pod, v)
		default:
			continue
		}
		pvc, err := pl.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			if newPod {
				return fmt.Errorf("looking up PVC %s/%s: %w", pod.Namespace, name, err)
			}
			continue
		}
		if v.Ephemeral != nil && !metav1.IsControlledBy(pvc, pod) {
			if newPod {
				return fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", pod.Namespace, name, pod.Namespace, pod.Name)
			}
			continue
		}
		if id, driver := pl.claimVolume(pvc); driver != "" {
			out[id] = driver
		}
	}
	return nil
}

// claimVolume names the CSI volume behind a claim: its bound volume's driver and handle, or for a
// claim not bound yet (or bound to a volume not in the cache) its class's provisioner and a name
// of the claim's own, so two pods of one pending claim count it once. Nothing for other volumes.
func (pl *NodeVolumeLimits) claimVolume(pvc *v1.PersistentVolumeClaim) (id, driver string) {
	if pvc.Spec.VolumeName != "" {
		if pv, err := pl.pvLister.Get(pvc.Spec.VolumeName); err == nil {
			if pv.Spec.CSI == nil {
				return "", ""
			}
			return pv.Spec.CSI.Driver + "/" + pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver
		}
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return "", ""
	}
	class, err := pl.classLister.Get(*pvc.Spec.StorageClassName)
	if err != nil {
		return "", ""
	}
	// A prefix no driver/handle pair starts with: a claim's stand-in never meets a real volume.
	return "unbound-claim:" + pvc.Namespace + "/" + pvc.Name, class.Provisioner
}

// attachedVolumes are the CSI volumes the node's VolumeAttachments hold (unique name -> driver).
func (pl *NodeVolumeLimits) attachedVolumes(nodeName string) (map[string]string, error) {
	out := map[string]string{}
	vas, err := pl.vaLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, va := range vas {
		if va.Spec.NodeName != nodeName || va.Spec.Attacher == "" || va.Spec.Source.PersistentVolumeName == nil {
			continue
		}
		pv, err := pl.pvLister.Get(*va.Spec.Source.PersistentVolumeName)
		if err != nil || pv.Spec.CSI == nil {
			continue
		}
		out[va.Spec.Attacher+"/"+pv.Spec.CSI.VolumeHandle] = va.Spec.Attacher
	}
	return out, nil
}

// EventsToRegister: a CSINode's limit raised, a pod leaving a node, an attachment gone, a claim
// made or bound.
func (*NodeVolumeLimits) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.KindCSINode, ActionType: framework.Add | framework.Update},
		{Resource: framework.KindAssignedPod, ActionType: framework.Delete},
		{Resource: framework.KindVolumeAttachment, ActionType: framework.Delete},
		{Resource: framework.KindPersistentVolumeClaim, ActionType: framework.Add | framework.Update},
	}
}
