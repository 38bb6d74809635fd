package replicaset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "replicaset"

// BurstReplicas caps the creates or deletes of one sync, as Kubernetes does.
const BurstReplicas = 500

// Owner is the seam that lets one implementation serve ReplicaSets and ReplicationControllers, as
// Kubernetes' replication manager is the ReplicaSet controller over converted objects: the
// controller decides on ReplicaSets only, and an Owner reads its own type as ReplicaSets and writes
// their status back.
type Owner struct {
	// Name is the controller's name (work queue, metrics).
	Name string
	// Kind is written into the controllerRef of the pods the controller creates and adopts.
	Kind schema.GroupVersionKind
	// Informer delivers the owner objects' events; the controller registers its handlers on it.
	Informer cache.SharedIndexInformer
	// Get reads the informer's cache and returns a copy the caller may change; List's objects are
	// only read.
	Get  func(namespace, name string) (*appsv1.ReplicaSet, error)
	List func(namespace string) ([]*appsv1.ReplicaSet, error)
	// GetLive reads from the API server, past the cache (the recheck before adopting).
	GetLive func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// UpdateStatus writes rs.Status through the owner's /status subresource.
	UpdateStatus func(ctx context.Context, rs *appsv1.ReplicaSet) error
	// EventObject is what events about rs are recorded against (the owner in its own type).
	EventObject func(rs *appsv1.ReplicaSet) runtime.Object
}

// ReplicaSets is the Owner of apps/v1 ReplicaSets.
func ReplicaSets(deps ctrlutil.Deps) Owner {
	informer := deps.Informers.Apps().V1().ReplicaSets()
	lister := informer.Lister()
	return Owner{
		Name:     Name,
		Kind:     appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		Informer: informer.Informer(),
		Get: func(namespace, name string) (*appsv1.ReplicaSet, error) {
			rs, err := lister.ReplicaSets(namespace).Get(name)
			if err != nil {
				return nil, err
			}
			return rs.DeepCopy(), nil
		},
		List: func(namespace string) ([]*appsv1.ReplicaSet, error) {
			return lister.ReplicaSets(namespace).List(labels.Everything())
		},
		GetLive: func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
			return deps.Client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
		},
		UpdateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) error {
			_, err := deps.Client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
			return err
		},
		EventObject: func(rs *appsv1.ReplicaSet) runtime.Object { return rs },
	}
}

// Controller reconciles ReplicaSets, or another Owner seen as ReplicaSets.
type Controller struct {
	client       kubernetes.Interface
	owner        Owner
	podLister    corelisters.PodLister
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	expectations *ctrlutil.Expectations
	loop         *ctrlutil.Loop
	synced       []cache.InformerSynced
}

// New builds the ReplicaSet controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) { return NewFor(deps, ReplicaSets(deps)) }

// NewFor builds the controller for owner and registers its informers' handlers.
func NewFor(deps ctrlutil.Deps, owner Owner) (*Controller, error) {
	podInformer := deps.Informers.Core().V1().Pods()
	c := &Controller{
		client:       deps.Client,
		owner:        owner,
		podLister:    podInformer.Lister(),
		recorder:     deps.Recorder,
		clock:        deps.Clock,
		expectations: ctrlutil.NewExpectations(deps.Clock),
		synced:       []cache.InformerSynced{owner.Informer.HasSynced, podInformer.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(owner.Name, deps, c.Sync)
	if _, err := owner.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.loop.Enqueue,
		UpdateFunc: func(_, obj any) { c.loop.Enqueue(obj) },
		DeleteFunc: c.deleteReplicaSet,
	}); err != nil {
		return nil, fmt.Errorf("%s informer handler: %w", owner.Name, err)
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("pod informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.loop.Run(ctx, workers, c.synced...)
}

// Expectations exposes the controller's expectations to tests of this package's users.
func (c *Controller) Expectations() *ctrlutil.Expectations { return c.expectations }

func (c *Controller) deleteReplicaSet(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.expectations.Delete(key)
	}
	c.loop.Enqueue(obj)
}

// ownerKey resolves a pod's controllerRef to an owner key, or "".
func (c *Controller) ownerKey(pod *corev1.Pod, ref *metav1.OwnerReference) string {
	if ref == nil || ref.Kind != c.owner.Kind.Kind || ref.APIVersion != c.owner.Kind.GroupVersion().String() {
		return ""
	}
	rs, err := c.owner.Get(pod.Namespace, ref.Name)
	if err != nil || rs.UID != ref.UID {
		return ""
	}
	return pod.Namespace + "/" + rs.Name
}

// enqueueMatching enqueues every ReplicaSet whose selector matches an orphan
// pod, so one of them can adopt it.
func (c *Controller) enqueueMatching(pod *corev1.Pod) {
	sets, err := c.owner.List(pod.Namespace)
	if err != nil {
		return
	}
	for _, rs := range sets {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		c.loop.Enqueue(rs)
	}
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already terminating (e.g. after a restart).
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if key := c.ownerKey(pod, ref); key != "" {
			c.expectations.CreationObserved(key)
			c.loop.Queue.Add(key)
		}
		return
	}
	c.enqueueMatching(pod)
}

func (c *Controller) updatePod(oldObj, newObj any) {
	oldPod, pod := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	if oldPod.ResourceVersion == pod.ResourceVersion {
		return
	}
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		if !reflect.DeepEqual(oldPod.Labels, pod.Labels) {
			c.deletePod(oldPod)
		}
		return
	}
	oldRef, ref := metav1.GetControllerOf(oldPod), metav1.GetControllerOf(pod)
	if !reflect.DeepEqual(oldRef, ref) {
		if key := c.ownerKey(oldPod, oldRef); key != "" {
			c.loop.Queue.Add(key)
		}
	}
	if ref != nil {
		if key := c.ownerKey(pod, ref); key != "" {
			c.loop.Queue.Add(key)
			// A pod that just became ready turns available minReadySeconds later.
			if !ctrlutil.IsPodReady(oldPod) && ctrlutil.IsPodReady(pod) {
				if rs, err := c.owner.Get(pod.Namespace, ref.Name); err == nil && rs.Spec.MinReadySeconds > 0 {
					c.loop.EnqueueAfter(key, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
				}
			}
		}
		return
	}
	if !reflect.DeepEqual(oldPod.Labels, pod.Labels) || !reflect.DeepEqual(oldRef, ref) {
		c.enqueueMatching(pod)
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if pod, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	key := c.ownerKey(pod, metav1.GetControllerOf(pod))
	if key == "" {
		return
	}
	c.expectations.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
	c.loop.Queue.Add(key)
}

// Sync reconciles the ReplicaSet with the given namespace/name key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a malformed key will never become valid
	}
	rs, err := c.owner.Get(namespace, name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s %s: %w", c.owner.Kind.Kind, key, err)
	}
	needsSync := c.expectations.Satisfied(key)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(c.owner.EventObject(rs), corev1.EventTypeWarning, "InvalidSelector", "invalid selector: %v", err)
		return nil
	}
	all, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods for %s: %w", key, err)
	}
	var active []*corev1.Pod
	for _, p := range all {
		// Pods another controller owns are never claimed (ctrlutil.DecideClaim): skip them here so
		// a sync does not copy the namespace's whole pod list.
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID != rs.UID {
			continue
		}
		if ctrlutil.IsPodActive(p) {
			active = append(active, p)
		}
	}
	pods, err := c.claimPods(ctx, rs, selector, active)
	if err != nil {
		return err
	}

	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, key, rs, pods)
	}
	now := c.clock.Now()
	status := computeStatus(rs, pods, manageErr, now)
	if err := c.updateStatus(ctx, rs, status); err != nil {
		return errors.Join(manageErr, err)
	}
	if manageErr == nil && rs.Spec.MinReadySeconds > 0 && status.ReadyReplicas != status.AvailableReplicas {
		if soonest := ctrlutil.SoonestAvailable(pods, rs.Spec.MinReadySeconds, now); soonest > 0 {
			c.loop.EnqueueAfter(key, soonest)
		}
	}
	return manageErr
}

// claimPods returns the pods rs owns after adopting matching orphans and
// releasing owned pods that no longer match.
func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	var owned []*corev1.Pod
	var errs []error
	var freshChecked bool
	deleting := rs.DeletionTimestamp != nil
	for _, pod := range pods {
		switch ctrlutil.DecideClaim(pod, rs.UID, selector, deleting) {
		case ctrlutil.Keep:
			owned = append(owned, pod)
		case ctrlutil.Adopt:
			// Re-read the owner once, uncached: adopting for a ReplicaSet that
			// is already being deleted (or was recreated) would orphan again.
			if !freshChecked {
				fresh, err := c.owner.GetLive(ctx, rs.Namespace, rs.Name)
				if err != nil {
					return nil, fmt.Errorf("recheck %s %s/%s before adoption: %w", c.owner.Kind.Kind, rs.Namespace, rs.Name, err)
				}
				if fresh.UID != rs.UID || fresh.DeletionTimestamp != nil {
					return owned, nil
				}
				freshChecked = true
			}
			patch, err := ctrlutil.AdoptPatch(pod, ctrlutil.NewControllerRef(rs, c.owner.Kind))
			if err == nil {
				_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			}
			switch {
			case err == nil:
				owned = append(owned, pod)
			case apierrors.IsNotFound(err):
			default:
				errs = append(errs, fmt.Errorf("adopt pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
		case ctrlutil.Release:
			patch, err := ctrlutil.ReleasePatch(pod, rs.UID)
			if err == nil {
				_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
				errs = append(errs, fmt.Errorf("release pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
		}
	}
	return owned, errors.Join(errs...)
}

func (c *Controller) manageReplicas(ctx context.Context, key string, rs *appsv1.ReplicaSet, pods []*corev1.Pod) error {
	want := int(ptrOr(rs.Spec.Replicas, 1))
	diff := len(pods) - want
	switch {
	case diff < 0:
		n := min(-diff, BurstReplicas)
		c.expectations.ExpectCreations(key, n)
		ref := ctrlutil.NewControllerRef(rs, c.owner.Kind)
		var unresolved atomic.Int32
		successes, err := ctrlutil.SlowStartBatch(n, 1, func() error {
			return c.createPod(ctx, rs, ctrlutil.PodFromTemplate(&rs.Spec.Template, rs.Namespace, rs.Name, ref), &unresolved)
		})
		// Creates not made (or not attempted) will never be observed; ones that may have been
		// made stay expected.
		if skipped := n - successes - int(unresolved.Load()); skipped > 0 {
			c.expectations.LowerCreations(key, skipped)
		}
		return err
	case diff > 0:
		n := min(diff, BurstReplicas)
		victims := podsToDelete(pods, n)
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = p.Namespace + "/" + p.Name
		}
		c.expectations.ExpectDeletions(key, keys)
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for _, p := range victims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
				if err != nil {
					c.expectations.DeletionObserved(key, p.Namespace+"/"+p.Name)
					if apierrors.IsNotFound(err) {
						return
					}
					c.recorder.Eventf(c.owner.EventObject(rs), corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
					mu.Lock()
					errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err))
					mu.Unlock()
					return
				}
				c.recorder.Eventf(c.owner.EventObject(rs), corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	return nil
}

// podsToDelete picks the n pods best deleted first; pods sharing a node with
// more of their siblings rank earlier so the survivors spread out.
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	onNode := map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			onNode[p.Spec.NodeName]++
		}
	}
	sorted := append([]*corev1.Pod(nil), pods...)
	ctrlutil.SortPodsForDeletion(sorted, onNode)
	return sorted[:n]
}

func computeStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fully, ready, available int32
	for _, p := range pods {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if ctrlutil.IsPodReady(p) {
			ready++
			if ctrlutil.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	status.Replicas = int32(len(pods))
	status.FullyLabeledReplicas = fully
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.ObservedGeneration = rs.Generation

	failure := findCondition(status.Conditions, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := "FailedCreate"
		if len(pods) > int(ptrOr(rs.Spec.Replicas, 1)) {
			reason = "FailedDelete"
		}
		status.Conditions = append(status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		var kept []appsv1.ReplicaSetCondition
		for _, c := range status.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure {
				kept = append(kept, c)
			}
		}
		status.Conditions = kept
	}
	return status
}

func findCondition(conds []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) error {
	if reflect.DeepEqual(rs.Status, status) {
		return nil
	}
	rs.Status = status
	if err := c.owner.UpdateStatus(ctx, rs); err != nil {
		return fmt.Errorf("update status of %s %s/%s: %w", c.owner.Kind.Kind, rs.Namespace, rs.Name, err)
	}
	return nil
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
