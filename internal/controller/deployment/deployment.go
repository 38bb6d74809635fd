package deployment

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "deployment"

func controllerKind() schema.GroupVersionKind {
	return appsv1.SchemeGroupVersion.WithKind("Deployment")
}

// Controller reconciles Deployments.
type Controller struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	recorder  record.EventRecorder
	clock     clock.PassiveClock
	loop      *ctrlutil.Loop
	synced    []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	dInformer := deps.Informers.Apps().V1().Deployments()
	rsInformer := deps.Informers.Apps().V1().ReplicaSets()
	podInformer := deps.Informers.Core().V1().Pods()
	c := &Controller{
		client:    deps.Client,
		dLister:   dInformer.Lister(),
		rsLister:  rsInformer.Lister(),
		podLister: podInformer.Lister(),
		recorder:  deps.Recorder,
		clock:     deps.Clock,
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	var err error
	c.synced, err = ctrlutil.NewWiring(Name).
		Watch(dInformer.Informer(), ctrlutil.On(ctrlutil.OnAll, c.loop.Enqueue)).
		Watch(rsInformer.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.replicaSetChanged, UpdateFunc: c.replicaSetUpdated, DeleteFunc: c.replicaSetChanged}).
		Watch(podInformer.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.podDeleted}).
		Done()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// ownerOf resolves a ReplicaSet's controllerRef to its Deployment.
func (c *Controller) ownerOf(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref == nil || ref.Kind != "Deployment" || ref.APIVersion != controllerKind().GroupVersion().String() {
		return nil
	}
	d, err := c.dLister.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

func (c *Controller) replicaSetChanged(obj any) {
	rs, ok := ctrlutil.Unwrap[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if d := c.ownerOf(rs.Namespace, metav1.GetControllerOf(rs)); d != nil {
		c.loop.Enqueue(d)
		return
	}
	if metav1.GetControllerOf(rs) == nil {
		c.enqueueMatching(rs)
	}
}

func (c *Controller) replicaSetUpdated(oldObj, newObj any) {
	old, cur := oldObj.(*appsv1.ReplicaSet), newObj.(*appsv1.ReplicaSet)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if oldRef, ref := metav1.GetControllerOf(old), metav1.GetControllerOf(cur); !reflect.DeepEqual(oldRef, ref) {
		if d := c.ownerOf(old.Namespace, oldRef); d != nil {
			c.loop.Enqueue(d)
		}
	}
	c.replicaSetChanged(cur)
}

func (c *Controller) enqueueMatching(rs *appsv1.ReplicaSet) {
	list, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range list {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
			c.loop.Enqueue(d)
		}
	}
}

// podDeleted matters only to Recreate, which waits for old pods to be gone.
func (c *Controller) podDeleted(obj any) {
	pod, ok := ctrlutil.Unwrap[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	if d := c.ownerOf(rs.Namespace, metav1.GetControllerOf(rs)); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.loop.Enqueue(d)
	}
}

// Sync reconciles the Deployment with the given namespace/name key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get deployment %s: %w", key, err)
	}
	d := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, err := c.client.AppsV1().Deployments(namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return err
		}
		return nil
	}
	rsList, err := c.claimReplicaSets(ctx, d, selector)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
		if err != nil {
			return err
		}
		return c.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
	}
	if err := c.checkPausedCondition(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.syncScale(ctx, d, rsList)
	}
	scaling, err := c.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return c.syncScale(ctx, d, rsList)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return c.rolloutRecreate(ctx, d, rsList)
	}
	return c.rolloutRolling(ctx, d, rsList)
}

// claimReplicaSets returns the ReplicaSets d owns after adopting orphans that
// match its selector and releasing those that no longer match.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list replicasets for %s/%s: %w", d.Namespace, d.Name, err)
	}
	var owned []*appsv1.ReplicaSet
	var errs []error
	checked := false
	for _, rs := range all {
		switch ctrlutil.DecideClaim(rs, d.UID, selector, d.DeletionTimestamp != nil) {
		case ctrlutil.Keep:
			owned = append(owned, rs.DeepCopy())
		case ctrlutil.Adopt:
			if !checked {
				fresh, err := c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("recheck deployment %s/%s before adoption: %w", d.Namespace, d.Name, err)
				}
				if fresh.UID != d.UID || fresh.DeletionTimestamp != nil {
					return owned, nil
				}
				checked = true
			}
			patch, err := ctrlutil.AdoptPatch(rs, ctrlutil.NewControllerRef(d, controllerKind()))
			if err == nil {
				_, err = c.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			}
			switch {
			case err == nil:
				owned = append(owned, rs.DeepCopy())
			case !apierrors.IsNotFound(err):
				errs = append(errs, fmt.Errorf("adopt replicaset %s/%s: %w", rs.Namespace, rs.Name, err))
			}
		case ctrlutil.Release:
			patch, err := ctrlutil.ReleasePatch(rs, d.UID)
			if err == nil {
				_, err = c.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("release replicaset %s/%s: %w", rs.Namespace, rs.Name, err))
			}
		}
	}
	return owned, errors.Join(errs...)
}

// checkPausedCondition records pause and resume in the Progressing condition,
// which also stops the progress deadline from counting while paused.
func (c *Controller) checkPausedCondition(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cond := getCondition(&d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == ReasonProgressDeadlineExceeded {
		return nil
	}
	pausedRecorded := cond != nil && cond.Reason == ReasonDeploymentPaused
	now := c.clock.Now()
	switch {
	case d.Spec.Paused && !pausedRecorded:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused, "Deployment is paused", now))
	case !d.Spec.Paused && pausedRecorded:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentResumed, "Deployment is resumed", now))
	default:
		return nil
	}
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("record pause of %s/%s: %w", d.Namespace, d.Name, err)
	}
	*d = *updated
	return nil
}

// replicaSetsAndSyncRevision splits the owned ReplicaSets into the new one
// (template equal to the deployment's, ignoring the hash label) and the old
// ones; with create it creates the new one when missing. It keeps the new
// ReplicaSet's and the deployment's revision annotations in step.
func (c *Controller) replicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	byCreation(rsList)
	var newRS *appsv1.ReplicaSet
	var oldRSs []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if newRS == nil && equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		oldRSs = append(oldRSs, rs)
	}
	var maxOld int64
	for _, rs := range oldRSs {
		maxOld = max(maxOld, revisionOf(rs))
	}
	newRevision := fmt.Sprint(maxOld + 1)
	newRS, err := c.syncNewReplicaSet(ctx, d, newRS, rsList, oldRSs, newRevision, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, oldRSs, nil
}

func (c *Controller) syncNewReplicaSet(ctx context.Context, d *appsv1.Deployment, existing *appsv1.ReplicaSet, all, oldRSs []*appsv1.ReplicaSet, newRevision string, create bool) (*appsv1.ReplicaSet, error) {
	now := c.clock.Now()
	if existing != nil {
		rs := existing.DeepCopy()
		annotationsChanged := setNewReplicaSetAnnotations(d, rs, newRevision, true)
		minReadyChanged := rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds
		if annotationsChanged || minReadyChanged {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("update revision of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
			rs = updated
		}
		if err := c.syncDeploymentRevision(ctx, d, rs.Annotations[RevisionAnnotation]); err != nil {
			return nil, err
		}
		if hasProgressDeadline(d) && getCondition(&d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet,
				fmt.Sprintf("Found new replica set %q", rs.Name), now))
			if err := c.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	hash := podTemplateHash(&d.Spec.Template, d.Status.CollisionCount)
	template := *d.Spec.Template.DeepCopy()
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	template.Labels[PodTemplateHashLabel] = hash
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[PodTemplateHashLabel] = hash
	rsLabels := map[string]string{}
	for k, v := range d.Spec.Template.Labels {
		rsLabels[k] = v
	}
	rsLabels[PodTemplateHashLabel] = hash
	replicas := newReplicaSetReplicas(d, all, nil)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			Labels:          rsLabels,
			OwnerReferences: []metav1.OwnerReference{*ctrlutil.NewControllerRef(d, controllerKind())},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &replicas,
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	setNewReplicaSetAnnotations(d, rs, newRevision, false)

	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Ours from an earlier sync whose event we have not seen, or a hash
		// collision with someone else's ReplicaSet: then bump collisionCount
		// so the next sync picks another name.
		// The cache may not have the ReplicaSet yet (a new leadership term's informers, or our own
		// create whose event is still on its way): read it from the API rather than take our own
		// ReplicaSet for a collision, which would start a second rollout of the same template.
		found, getErr := c.rsLister.ReplicaSets(d.Namespace).Get(rs.Name)
		if apierrors.IsNotFound(getErr) {
			found, getErr = c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		}
		if getErr != nil {
			return nil, fmt.Errorf("read existing replicaset %s: %w", rs.Name, getErr)
		}
		if ref := metav1.GetControllerOf(found); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &found.Spec.Template) {
			return found.DeepCopy(), nil
		}
		var count int32
		if d.Status.CollisionCount != nil {
			count = *d.Status.CollisionCount
		}
		count++
		d.Status.CollisionCount = &count
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("replicaset name %s collides; collisionCount now %d", rs.Name, count)
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonReplicaSetCreateError, msg, now))
			if uerr := c.updateStatus(ctx, d); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
		c.recorder.Event(d, corev1.EventTypeWarning, ReasonReplicaSetCreateError, msg)
		return nil, fmt.Errorf("create replicaset for %s/%s: %w", d.Namespace, d.Name, err)
	}
	if replicas > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s to %d from 0", created.Name, replicas)
	}
	if err := c.syncDeploymentRevision(ctx, d, newRevision); err != nil {
		return nil, err
	}
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated,
			fmt.Sprintf("Created new replica set %q", created.Name), now))
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// syncDeploymentRevision writes the new ReplicaSet's revision onto the
// deployment (kubectl rollout history reads it) through /status, as
// Kubernetes' controller does: annotation changes there do not bump the
// deployment's generation, so observedGeneration stays meaningful.
func (c *Controller) syncDeploymentRevision(ctx context.Context, d *appsv1.Deployment, revision string) error {
	if revision == "" || d.Annotations[RevisionAnnotation] == revision {
		return nil
	}
	next := d.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[RevisionAnnotation] = revision
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("set revision of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.Annotations = updated.Annotations
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

// newReplicaSetReplicas is the size the new ReplicaSet may have now: the full
// size for Recreate; for RollingUpdate as much as maxSurge allows.
func newReplicaSetReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	replicas := replicasOf(d.Spec.Replicas)
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return replicas
	}
	var current int32
	if newRS != nil {
		current = replicasOf(newRS.Spec.Replicas)
	}
	total := sumSpecReplicas(all)
	maxTotal := replicas + maxSurge(d)
	if total >= maxTotal {
		return current
	}
	up := min(maxTotal-total, replicas-current)
	return current + max(up, 0)
}

// scaleReplicaSet sets rs's size (and replica annotations) and records the event.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	old := replicasOf(rs.Spec.Replicas)
	sizeChanged := old != size
	desired, maxTotal := replicasOf(d.Spec.Replicas), replicasOf(d.Spec.Replicas)+maxSurge(d)
	if !sizeChanged && !replicasAnnotationsNeedUpdate(rs, desired, maxTotal) {
		return false, rs, nil
	}
	cp := rs.DeepCopy()
	cp.Spec.Replicas = &size
	setReplicasAnnotations(cp, desired, maxTotal)
	updated, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, rs, fmt.Errorf("scale replicaset %s/%s to %d: %w", rs.Namespace, rs.Name, size, err)
	}
	*rs = *updated
	if sizeChanged {
		op := "up"
		if size < old {
			op = "down"
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s to %d from %d", op, rs.Name, size, old)
	}
	return sizeChanged, rs, nil
}

// isScalingEvent: the deployment's replicas changed since the ReplicaSets
// were last sized (their desired-replicas annotation disagrees).
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeSets(append(oldRSs, newRS)) {
		v, ok := rs.Annotations[DesiredReplicasAnnotation]
		if ok && v != fmt.Sprint(replicasOf(d.Spec.Replicas)) {
			return true, nil
		}
	}
	return false, nil
}

// requeueAt schedules a resync of d after delay (progress deadline checks).
func (c *Controller) requeueAfter(d *appsv1.Deployment, delay time.Duration) {
	c.loop.EnqueueAfter(d.Namespace+"/"+d.Name, delay)
}
