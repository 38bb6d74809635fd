package pvcprotection

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "pvc-protection"

// podClaimIndex indexes the pod cache by the "namespace/name" keys of the claims a pod names.
const podClaimIndex = "pvcprotection-claims"

// Action is what one reconcile of a claim does.
type Action int

const (
	// Nothing: the claim is as it should be (or is in use and must wait).
	Nothing Action = iota
	// AddFinalizer: a live claim lacks the finalizer.
	AddFinalizer
	// RemoveFinalizer: the claim is being deleted and no pod uses it.
	RemoveFinalizer
)

// Plan is Decide's answer: the action and, when the claim is kept for a pod, that pod's name.
type Plan struct {
	Action Action
	UsedBy string
}

// Decide is what to do with claim given the pods of its namespace. It is pure.
func Decide(claim *corev1.PersistentVolumeClaim, pods []*corev1.Pod) Plan {
	has := slices.Contains(claim.Finalizers, volumeutil.PVCProtectionFinalizer)
	if claim.DeletionTimestamp == nil {
		if !has {
			return Plan{Action: AddFinalizer}
		}
		return Plan{}
	}
	if !has {
		return Plan{}
	}
	for _, pod := range pods {
		if PodUsesClaim(pod, claim) {
			return Plan{UsedBy: pod.Name}
		}
	}
	return Plan{Action: RemoveFinalizer}
}

// PodUsesClaim reports whether pod holds claim, by upstream's rule (see the package doc).
func PodUsesClaim(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	// The kubelet sees only scheduled pods, and the scheduler places no pod on a claim that is
	// being deleted, so an unscheduled pod will never use it.
	if pod.Namespace != claim.Namespace || pod.Spec.NodeName == "" {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name:
			return true
		case v.Ephemeral != nil && volumeutil.EphemeralClaimName(pod, v) == claim.Name && ownedBy(claim, pod) && !shutDown(pod):
			return true
		}
	}
	return false
}

// ownedBy reports whether claim was made for pod's ephemeral volume: a claim of the same name that
// the pod does not control is someone else's and the pod will not run on it.
func ownedBy(claim *corev1.PersistentVolumeClaim, pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(claim)
	return ref != nil && ref.UID == pod.UID
}

// shutDown reports whether the kubelet is done with pod or it was force-deleted: a deletion with no
// grace period left. Counting such a pod's ephemeral claim as unused breaks the cycle of a pod
// finalizer waiting for the claim while the claim waits for the pod.
func shutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// mayRelease reports whether an event about pod may let a claim go: a deleted, finished, deleting
// or unscheduled pod. A running scheduled pod only keeps claims, so its events enqueue nothing.
func mayRelease(pod *corev1.Pod, deleted bool) bool {
	return deleted || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Controller removes the protection finalizer from claims no pod uses.
type Controller struct {
	client   kubernetes.Interface
	claims   corelisters.PersistentVolumeClaimLister
	podCache cache.Indexer
	loop     *ctrlutil.Loop
	synced   []cache.InformerSynced
	log      *slog.Logger
}

// New builds the controller and registers its informer handlers and the pod index.
func New(deps ctrlutil.Deps) (*Controller, error) {
	claimInformer := deps.Informers.Core().V1().PersistentVolumeClaims()
	podInformer := deps.Informers.Core().V1().Pods()
	c := &Controller{
		client: deps.Client, claims: claimInformer.Lister(), podCache: podInformer.Informer().GetIndexer(),
		synced: []cache.InformerSynced{claimInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		log:    deps.Log(),
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if err := podInformer.Informer().AddIndexers(cache.Indexers{podClaimIndex: claimKeys}); err != nil {
		return nil, fmt.Errorf("pod claim index: %w", err)
	}
	enqueueClaim := func(o any) {
		if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok && Decide(pvc, nil).Action != Nothing {
			c.loop.Enqueue(pvc)
		}
	}
	if _, err := claimInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueClaim, UpdateFunc: func(_, o any) { enqueueClaim(o) },
	}); err != nil {
		return nil, fmt.Errorf("claim informer handler: %w", err)
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { c.enqueuePodClaims(o, false) },
		UpdateFunc: func(old, o any) {
			c.enqueuePodClaims(o, false)
			// An update may hide a delete and a create under the same name: the old pod is gone.
			if oldPod, ok := old.(*corev1.Pod); ok {
				if pod, ok := o.(*corev1.Pod); ok && oldPod.UID != pod.UID {
					c.enqueuePodClaims(oldPod, true)
				}
			}
		},
		DeleteFunc: func(o any) { c.enqueuePodClaims(o, true) },
	}); err != nil {
		return nil, fmt.Errorf("pod informer handler: %w", err)
	}
	return c, nil
}

// claimKeys is the pod index function: the keys of the claims the pod names.
func claimKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	names := volumeutil.PodClaimNames(pod)
	keys := make([]string, 0, len(names))
	for _, n := range names {
		keys = append(keys, pod.Namespace+"/"+n)
	}
	return keys, nil
}

func (c *Controller) enqueuePodClaims(o any, deleted bool) {
	if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o, deleted = tomb.Obj, true
	}
	pod, ok := o.(*corev1.Pod)
	if !ok || !mayRelease(pod, deleted) {
		return
	}
	for _, name := range volumeutil.PodClaimNames(pod) {
		c.loop.Queue.Add(pod.Namespace + "/" + name)
	}
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// cachedUsers are the cached pods that name the claim.
func (c *Controller) cachedUsers(key string) ([]*corev1.Pod, error) {
	objs, err := c.podCache.ByIndex(podClaimIndex, key)
	if err != nil {
		return nil, fmt.Errorf("pods naming claim %s in the cache: %w", key, err)
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// livePods lists the namespace's pods from the API server.
func (c *Controller) livePods(ctx context.Context, namespace string) ([]*corev1.Pod, error) {
	list, err := c.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", namespace, err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}

// Sync adds or removes the finalizer of the claim named by key ("namespace/name").
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := c.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get claim %s: %w", key, err)
	}
	cached, err := c.cachedUsers(key)
	if err != nil {
		return err
	}
	plan := Decide(claim, cached)
	if plan.Action == RemoveFinalizer {
		// The cache may not have a pod created a moment ago: only the API server's answer lets
		// the claim go.
		live, err := c.livePods(ctx, namespace)
		if err != nil {
			return err
		}
		plan = Decide(claim, live)
	}
	log := c.log.With("claim", key)
	switch plan.Action {
	case AddFinalizer:
		next := claim.DeepCopy()
		next.Finalizers = append(next.Finalizers, volumeutil.PVCProtectionFinalizer)
		if err := c.update(ctx, next); err != nil {
			return fmt.Errorf("add protection finalizer to claim %s: %w", key, err)
		}
		log.Debug("added protection finalizer")
	case RemoveFinalizer:
		next := claim.DeepCopy()
		next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == volumeutil.PVCProtectionFinalizer })
		if err := c.update(ctx, next); err != nil {
			return fmt.Errorf("remove protection finalizer from claim %s: %w", key, err)
		}
		log.Info("claim is used by no pod; removed its protection finalizer")
	default:
		if plan.UsedBy != "" {
			log.Debug("keeping claim being deleted: a pod uses it", "pod", namespace+"/"+plan.UsedBy)
		}
	}
	return nil
}

// update writes the claim; a claim gone meanwhile needs nothing more.
func (c *Controller) update(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	_, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
