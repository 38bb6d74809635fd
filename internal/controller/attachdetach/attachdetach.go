package attachdetach

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// Name is the controller's name in --controllers and in metrics (kube-controller-manager's alias).
const Name = "attachdetach"

// Indexes this controller adds to the shared caches.
const (
	podNodeIndex = "attachdetach-pod-node"
	vaNodeIndex  = "attachdetach-va-node"
	vaPVIndex    = "attachdetach-va-pv"
)

// Controller keeps VolumeAttachments and the nodes' volumesAttached; its work queue holds node names.
type Controller struct {
	client    kubernetes.Interface
	clock     clock.Clock
	recorder  record.EventRecorder
	pods      cache.Indexer
	nodes     corelisters.NodeLister
	claims    corelisters.PersistentVolumeClaimLister
	volumes   corelisters.PersistentVolumeLister
	drivers   storagelisters.CSIDriverLister
	vas       cache.Indexer
	loop      *ctrlutil.Loop
	synced    []cache.InformerSynced
	mu        sync.Mutex
	requested map[string]map[string]time.Time // by node: Plan.DetachRequested
	reported  map[string]bool                 // "node/pv" Multi-Attach errors already told
	attachErr map[string]string               // "node/attachment": the attach error last told
	// volumeOf is the volume of each attachment seen with its PV, by attachment name, so that an
	// attachment whose PV is deleted before its detach is still detached once unmounted (upstream's
	// actual state of the world keeps it the same way). One whose PV was never seen is not ours.
	volumeOf map[string]corev1.UniqueVolumeName
}

// New builds the controller on deps' shared informers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	f := deps.Informers
	pods, nodes := f.Core().V1().Pods(), f.Core().V1().Nodes()
	claims, volumes := f.Core().V1().PersistentVolumeClaims(), f.Core().V1().PersistentVolumes()
	vas, drivers := f.Storage().V1().VolumeAttachments(), f.Storage().V1().CSIDrivers()
	c := &Controller{
		client: deps.Client, clock: deps.Clock, recorder: deps.Recorder,
		pods: pods.Informer().GetIndexer(), nodes: nodes.Lister(), claims: claims.Lister(), volumes: volumes.Lister(),
		drivers: drivers.Lister(), vas: vas.Informer().GetIndexer(),
		requested: map[string]map[string]time.Time{}, reported: map[string]bool{}, attachErr: map[string]string{},
		volumeOf: map[string]corev1.UniqueVolumeName{},
	}
	if err := pods.Informer().AddIndexers(cache.Indexers{podNodeIndex: func(o any) ([]string, error) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("pod index: %w", err)
	}
	if err := vas.Informer().AddIndexers(cache.Indexers{
		vaNodeIndex: func(o any) ([]string, error) {
			if va, ok := o.(*storagev1.VolumeAttachment); ok {
				return []string{va.Spec.NodeName}, nil
			}
			return nil, nil
		},
		vaPVIndex: func(o any) ([]string, error) {
			if va, ok := o.(*storagev1.VolumeAttachment); ok && va.Spec.Source.PersistentVolumeName != nil {
				return []string{*va.Spec.Source.PersistentVolumeName}, nil
			}
			return nil, nil
		},
	}); err != nil {
		return nil, fmt.Errorf("volume attachment index: %w", err)
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	c.synced = []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced, claims.Informer().HasSynced,
		volumes.Informer().HasSynced, vas.Informer().HasSynced, drivers.Informer().HasSynced}
	if err := c.handle(pods.Informer(), nodes.Informer(), claims.Informer(), vas.Informer(), drivers.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// handle registers the event handlers; each only enqueues the nodes an event may change.
func (c *Controller) handle(pods, nodes, claims, vas, drivers cache.SharedIndexInformer) error {
	podNode := func(o any) {
		if p, ok := tombstone(o).(*corev1.Pod); ok && p.Spec.NodeName != "" {
			c.loop.Queue.Add(p.Spec.NodeName)
		}
	}
	vaNode := func(o any) {
		if va, ok := tombstone(o).(*storagev1.VolumeAttachment); ok {
			c.loop.Queue.Add(va.Spec.NodeName)
		}
	}
	handlers := []struct {
		informer cache.SharedIndexInformer
		h        cache.ResourceEventHandler
	}{
		{pods, cache.ResourceEventHandlerFuncs{AddFunc: podNode, UpdateFunc: func(o, n any) { podNode(o); podNode(n) }, DeleteFunc: podNode}},
		{nodes, cache.ResourceEventHandlerFuncs{
			AddFunc:    c.loop.Enqueue,
			UpdateFunc: ctrlutil.OnNodeUpdate(NodeInputsChanged, c.loop.Enqueue),
			DeleteFunc: c.loop.Enqueue,
		}},
		// A claim bound (or its volume replaced) changes what its pods' nodes need.
		{claims, cache.ResourceEventHandlerFuncs{AddFunc: c.enqueueClaimUsers, UpdateFunc: func(_, n any) { c.enqueueClaimUsers(n) }}},
		// An attachment gone may unblock a volume waiting on another node (Multi-Attach).
		{vas, cache.ResourceEventHandlerFuncs{AddFunc: vaNode, UpdateFunc: func(_, n any) { vaNode(n) }, DeleteFunc: func(o any) {
			if va, ok := tombstone(o).(*storagev1.VolumeAttachment); ok {
				c.mu.Lock()
				delete(c.volumeOf, va.Name)
				c.mu.Unlock()
			}
			vaNode(o)
			c.enqueueAllNodes()
		}}},
		{drivers, cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { c.enqueueAllNodes() }, UpdateFunc: func(any, any) { c.enqueueAllNodes() }, DeleteFunc: func(any) { c.enqueueAllNodes() },
		}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.h); err != nil {
			return fmt.Errorf("%s event handler: %w", Name, err)
		}
	}
	return nil
}

// NodeInputsChanged reports whether a node update changed what Decide reads of the node: whether
// the controller manages it, the volumes its kubelet has in use, its Ready status, its
// out-of-service taint, or its volumesAttached (written by someone else, it is put right).
// Heartbeats change none of them.
func NodeInputsChanged(old, cur *corev1.Node) bool {
	managed := func(n *corev1.Node) string { return n.Annotations[volumeutil.AnnControllerManagedAttachDetach] }
	_, oldReady, oldOut := nodeVolumeState(old)
	_, curReady, curOut := nodeVolumeState(cur)
	return managed(old) != managed(cur) || oldReady != curReady || oldOut != curOut ||
		!slices.Equal(old.Status.VolumesInUse, cur.Status.VolumesInUse) ||
		!sameAttached(old.Status.VolumesAttached, cur.Status.VolumesAttached)
}

func tombstone(o any) any {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return o
}

func (c *Controller) enqueueAllNodes() {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	for _, n := range nodes {
		c.loop.Queue.Add(n.Name)
	}
}

// enqueueClaimUsers enqueues the nodes of the scheduled pods that use the claim.
func (c *Controller) enqueueClaimUsers(o any) {
	claim, ok := o.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	objs, err := c.pods.ByIndex(cache.NamespaceIndex, claim.Namespace)
	if err != nil {
		return
	}
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		if pod.Spec.NodeName != "" && slices.Contains(volumeutil.PodClaimNames(pod), claim.Name) {
			c.loop.Queue.Add(pod.Spec.NodeName)
		}
	}
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.loop.Run(ctx, workers, c.synced...)
}

// Sync reconciles one node's attachments and status.
func (c *Controller) Sync(ctx context.Context, nodeName string) error {
	state, err := c.nodeState(nodeName)
	if err != nil {
		return err
	}
	plan := Decide(state)
	c.mu.Lock()
	if state.Node == nil && len(state.Attachments) == 0 {
		delete(c.requested, nodeName)
	} else {
		c.requested[nodeName] = plan.DetachRequested
	}
	c.mu.Unlock()
	c.reportMultiAttach(nodeName, plan.MultiAttach)
	c.reportAttachErrors(nodeName, plan.AttachErrors)
	// The node stops listing a volume as attached before its attachment goes, so the kubelet never
	// mounts a volume being detached.
	if state.Node != nil && !sameAttached(state.Node.Status.VolumesAttached, plan.VolumesAttached) {
		if err := c.patchVolumesAttached(ctx, nodeName, plan.VolumesAttached); err != nil {
			return err
		}
	}
	for _, name := range plan.Delete {
		err := c.client.StorageV1().VolumeAttachments().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("detach: delete volumeattachment %s of node %s: %w", name, nodeName, err)
		}
	}
	for _, va := range plan.Create {
		_, err := c.client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("attach: create volumeattachment %s for volume %s on node %s: %w", va.Name, *va.Spec.Source.PersistentVolumeName, nodeName, err)
		}
	}
	if plan.RequeueAfter > 0 {
		c.loop.EnqueueAfter(nodeName, plan.RequeueAfter)
	}
	return nil
}

// nodeState gathers Decide's input from the caches.
func (c *Controller) nodeState(nodeName string) (NodeState, error) {
	s := NodeState{NodeName: nodeName, Now: c.clock.Now(), Elsewhere: map[string][]string{}}
	node, err := c.nodes.Get(nodeName)
	switch {
	case err == nil:
		s.Node = node
	case !apierrors.IsNotFound(err):
		return s, err
	}
	objs, err := c.pods.ByIndex(podNodeIndex, nodeName)
	if err != nil {
		return s, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	s.Desired = DesiredVolumes(pods, Lookup{
		Claim: func(namespace, name string) *corev1.PersistentVolumeClaim {
			pvc, _ := c.claims.PersistentVolumeClaims(namespace).Get(name)
			return pvc
		},
		Volume: func(name string) *corev1.PersistentVolume { pv, _ := c.volumes.Get(name); return pv },
		Driver: func(name string) *storagev1.CSIDriver { d, _ := c.drivers.Get(name); return d },
	})
	if s.Attachments, err = c.attachments(nodeName); err != nil {
		return s, err
	}
	for _, v := range s.Desired {
		objs, err := c.vas.ByIndex(vaPVIndex, v.PV)
		if err != nil {
			return s, err
		}
		for _, o := range objs {
			if va := o.(*storagev1.VolumeAttachment); va.Spec.NodeName != nodeName {
				s.Elsewhere[v.PV] = append(s.Elsewhere[v.PV], va.Spec.NodeName)
			}
		}
		slices.Sort(s.Elsewhere[v.PV])
	}
	c.mu.Lock()
	s.DetachRequested = c.requested[nodeName]
	c.mu.Unlock()
	return s, nil
}

// attachments are the node's VolumeAttachments of CSI persistent volumes that exist, or existed
// while the controller watched (volumeOf).
func (c *Controller) attachments(nodeName string) ([]Attachment, error) {
	objs, err := c.vas.ByIndex(vaNodeIndex, nodeName)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Attachment
	for _, o := range objs {
		va := o.(*storagev1.VolumeAttachment)
		if va.Spec.Source.PersistentVolumeName == nil {
			continue
		}
		unique, known := c.volumeOf[va.Name]
		if pv, err := c.volumes.Get(*va.Spec.Source.PersistentVolumeName); err == nil && pv.Spec.CSI != nil {
			unique, known = volumeutil.CSIUniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle), true
			c.volumeOf[va.Name] = unique
		}
		if known {
			out = append(out, Attachment{VA: va, Unique: unique})
		}
	}
	slices.SortFunc(out, func(a, b Attachment) int { return strings.Compare(a.VA.Name, b.VA.Name) })
	return out, nil
}

// reportMultiAttach tells each pod of a volume blocked by a Multi-Attach error once, as upstream does.
func (c *Controller) reportMultiAttach(nodeName string, errs []MultiAttachError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	blocked := map[string]bool{}
	for _, e := range errs {
		key := nodeName + "/" + e.Volume.PV
		blocked[key] = true
		if c.reported[key] {
			continue
		}
		c.reported[key] = true
		for _, pod := range e.Volume.Pods {
			c.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedAttachVolume",
				"Multi-Attach error for volume %q Volume is already exclusively attached to one node and can't be attached to another", e.Volume.PV)
		}
	}
	// A volume no longer blocked (attached, or not wanted any more) may be told again later.
	for key := range c.reported {
		if strings.HasPrefix(key, nodeName+"/") && !blocked[key] {
			delete(c.reported, key)
		}
	}
}

// reportAttachErrors tells the pods of a volume the attacher could not attach, once per distinct
// error, as upstream's FailedAttachVolume events.
func (c *Controller) reportAttachErrors(nodeName string, errs []AttachError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	failing := map[string]bool{}
	for _, e := range errs {
		key := nodeName + "/" + e.Attachment
		failing[key] = true
		if c.attachErr[key] == e.Message {
			continue
		}
		c.attachErr[key] = e.Message
		for _, pod := range e.Volume.Pods {
			c.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedAttachVolume", "AttachVolume.Attach failed for volume %q : %s", e.Volume.PV, e.Message)
		}
	}
	for key := range c.attachErr {
		if strings.HasPrefix(key, nodeName+"/") && !failing[key] {
			delete(c.attachErr, key)
		}
	}
}

func sameAttached(a, b []corev1.AttachedVolume) bool {
	return slices.EqualFunc(sortedAttached(a), sortedAttached(b), func(x, y corev1.AttachedVolume) bool { return x == y })
}

func sortedAttached(v []corev1.AttachedVolume) []corev1.AttachedVolume {
	out := slices.Clone(v)
	slices.SortFunc(out, func(a, b corev1.AttachedVolume) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}

// patchVolumesAttached replaces the node's status.volumesAttached (a merge patch replaces the list;
// the kubelet's own status patches leave it alone).
func (c *Controller) patchVolumesAttached(ctx context.Context, nodeName string, attached []corev1.AttachedVolume) error {
	var list any = attached
	if len(attached) == 0 {
		list = nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"volumesAttached": list}})
	if err != nil {
		return err
	}
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, nodeName, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("set volumesAttached of node %s: %w", nodeName, err)
	}
	return nil
}
