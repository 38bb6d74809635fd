package deployment

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// rolloutRolling surges the new ReplicaSet up and scales old ones down within
// maxSurge/maxUnavailable, one step per sync; ReplicaSet status events drive
// the next step.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)

	scaledUp, err := c.reconcileNewReplicaSet(ctx, all, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	scaledDown, err := c.reconcileOldReplicaSets(ctx, all, activeSets(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if complete(d, &d.Status) {
		if err := c.cleanup(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

func (c *Controller) reconcileNewReplicaSet(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	want := replicasOf(d.Spec.Replicas)
	cur := replicasOf(newRS.Spec.Replicas)
	if cur == want {
		return false, nil
	}
	if cur > want {
		scaled, _, err := c.scaleReplicaSet(ctx, newRS, want, d)
		return scaled, err
	}
	scaled, _, err := c.scaleReplicaSet(ctx, newRS, newReplicaSetReplicas(d, all, newRS), d)
	return scaled, err
}

func (c *Controller) reconcileOldReplicaSets(ctx context.Context, all, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if sumSpecReplicas(oldRSs) == 0 {
		return false, nil
	}
	minAvailable := replicasOf(d.Spec.Replicas) - maxUnavailable(d)
	newUnavailable := replicasOf(newRS.Spec.Replicas) - newRS.Status.AvailableReplicas
	maxScaledDown := sumSpecReplicas(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	// Unhealthy old replicas go first: removing them costs no availability.
	cleaned, err := c.cleanupUnhealthyReplicas(ctx, oldRSs, d, maxScaledDown)
	if err != nil {
		return false, err
	}
	scaled, err := c.scaleDownOldForRollingUpdate(ctx, append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS), oldRSs, d)
	if err != nil {
		return false, err
	}
	return cleaned+scaled > 0, nil
}

func (c *Controller) cleanupUnhealthyReplicas(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment, maxCleanup int32) (int32, error) {
	byCreation(oldRSs)
	var total int32
	for _, rs := range oldRSs {
		if total >= maxCleanup {
			break
		}
		size := replicasOf(rs.Spec.Replicas)
		// Status may still count pods of a set just scaled down (available > size): then it has
		// no unhealthy replicas, and size-available would scale it up.
		if size == 0 || size <= rs.Status.AvailableReplicas {
			continue
		}
		down := min(maxCleanup-total, size-rs.Status.AvailableReplicas)
		if _, _, err := c.scaleReplicaSet(ctx, rs, size-down, d); err != nil {
			return total, err
		}
		total += down
	}
	return total, nil
}

func (c *Controller) scaleDownOldForRollingUpdate(ctx context.Context, all, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := replicasOf(d.Spec.Replicas) - maxUnavailable(d)
	// A set's status can lag its scale-down; its available pods will not outnumber its size.
	var available int32
	for _, rs := range all {
		available += min(rs.Status.AvailableReplicas, replicasOf(rs.Spec.Replicas))
	}
	if available <= minAvailable {
		return 0, nil
	}
	byCreation(oldRSs)
	budget := available - minAvailable
	var total int32
	for _, rs := range oldRSs {
		if total >= budget {
			break
		}
		size := replicasOf(rs.Spec.Replicas)
		if size == 0 {
			continue
		}
		down := min(size, budget-total)
		if _, _, err := c.scaleReplicaSet(ctx, rs, size-down, d); err != nil {
			return total, err
		}
		total += down
	}
	return total, nil
}

// rolloutRecreate scales every old ReplicaSet to zero, waits until their pods
// are gone, then creates and scales up the new one.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaledDown := false
	for _, rs := range activeSets(oldRSs) {
		scaled, _, err := c.scaleReplicaSet(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	running, err := c.oldPodsRunning(newRS, oldRSs, d)
	if err != nil {
		return err
	}
	if running {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		newRS, oldRSs, err = c.replicaSetsAndSyncRevision(ctx, d, rsList, true)
		if err != nil {
			return err
		}
		all = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	}
	if _, _, err := c.scaleReplicaSet(ctx, newRS, replicasOf(d.Spec.Replicas), d); err != nil {
		return err
	}
	if complete(d, &d.Status) {
		if err := c.cleanup(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

// oldPodsRunning: any old ReplicaSet still reports pods, or a non-terminated
// pod of an old ReplicaSet is still in the cache.
func (c *Controller) oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if sumStatus(oldRSs, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas }) > 0 {
		return true, nil
	}
	oldUIDs := map[string]bool{}
	for _, rs := range oldRSs {
		if newRS == nil || rs.UID != newRS.UID {
			oldUIDs[string(rs.UID)] = true
		}
	}
	pods, err := c.podLister.Pods(d.Namespace).List(labels.Everything())
	if err != nil {
		return false, fmt.Errorf("list pods of %s/%s: %w", d.Namespace, d.Name, err)
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || !oldUIDs[string(ref.UID)] {
			continue
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true, nil
		}
	}
	return false, nil
}

// syncScale handles a paused deployment or a change of replicas: resize the
// ReplicaSets proportionally without rolling anything out.
func (c *Controller) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := c.cleanup(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
}

func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	replicas := replicasOf(d.Spec.Replicas)
	active := activeSets(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	// One active ReplicaSet (or none: then the newest) takes the whole size.
	if len(active) <= 1 {
		target := newRS
		if len(active) == 1 {
			target = active[0]
		} else if target == nil && len(oldRSs) > 0 {
			sorted := append([]*appsv1.ReplicaSet(nil), oldRSs...)
			byCreation(sorted)
			target = sorted[len(sorted)-1]
		}
		if target == nil || replicasOf(target.Spec.Replicas) == replicas {
			return nil
		}
		_, _, err := c.scaleReplicaSet(ctx, target, replicas, d)
		return err
	}
	// The new ReplicaSet is saturated: the old ones go.
	if newRS != nil && replicasOf(newRS.Spec.Replicas) == replicas && newRS.Status.AvailableReplicas == replicas {
		for _, rs := range activeSets(oldRSs) {
			if _, _, err := c.scaleReplicaSet(ctx, rs, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return nil
	}
	// Mid-rollout resize: spread the difference over the active ReplicaSets in
	// proportion to their sizes (proportionalSizes).
	current := sumSpecReplicas(active)
	allowed := replicas
	if replicas > 0 {
		allowed += maxSurge(d)
	}
	toAdd := allowed - current
	if toAdd == 0 {
		return nil
	}
	active, sizes := proportionalSizes(active, replicas, allowed, d.Status.Replicas)
	for i, rs := range active {
		if _, _, err := c.scaleReplicaSet(ctx, rs, sizes[i], d); err != nil {
			return err
		}
	}
	return nil
}

// proportionalSizes decides the sizes of the active ReplicaSets when the deployment's size changes
// mid-rollout, as Kubernetes' deployment controller does (the conformance spec "proportional
// scaling" checks the exact numbers): each set's new size is its size scaled from the total it was
// last sized for (its max-replicas annotation, else statusReplicas) to allowed (replicas plus
// maxSurge, 0 when replicas is 0), rounded to the nearest integer, and the change is capped at
// what is left to add (or remove); whatever rounding leaves over goes to the first set. Sets are
// taken bigger first, then newer first when growing and older first when shrinking. It returns
// the sets in that order with their sizes.
func proportionalSizes(active []*appsv1.ReplicaSet, replicas, allowed, statusReplicas int32) ([]*appsv1.ReplicaSet, []int32) {
	sorted := append([]*appsv1.ReplicaSet(nil), active...)
	current := sumSpecReplicas(sorted)
	toAdd := allowed - current
	sort.SliceStable(sorted, func(i, j int) bool {
		si, sj := replicasOf(sorted[i].Spec.Replicas), replicasOf(sorted[j].Spec.Replicas)
		if si != sj {
			return si > sj
		}
		if toAdd > 0 {
			return sorted[j].CreationTimestamp.Before(&sorted[i].CreationTimestamp)
		}
		return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp)
	})
	sizes := make([]int32, len(sorted))
	var added int32
	for i, rs := range sorted {
		size := replicasOf(rs.Spec.Replicas)
		sizes[i] = size
		if toAdd == 0 || size == 0 || added == toAdd {
			continue
		}
		var change int32
		if replicas == 0 {
			change = -size
		} else {
			sizedFor := statusReplicas
			if v, err := strconv.ParseInt(rs.Annotations[MaxReplicasAnnotation], 10, 32); err == nil {
				sizedFor = int32(v)
			}
			if sizedFor > 0 {
				change = int32(math.Round(float64(size)*float64(allowed)/float64(sizedFor))) - size
			}
		}
		if toAdd > 0 {
			change = min(change, toAdd-added)
		} else {
			change = max(change, toAdd-added)
		}
		sizes[i] = size + change
		added += change
	}
	if len(sorted) > 0 && toAdd != 0 {
		sizes[0] = max(sizes[0]+toAdd-added, 0)
	}
	return sorted, sizes
}

// cleanup deletes the oldest surplus ReplicaSets beyond revisionHistoryLimit,
// never one that still has pods.
func (c *Controller) cleanup(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := len(cleanable) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	sort.SliceStable(cleanable, func(i, j int) bool {
		ri, rj := revisionOf(cleanable[i]), revisionOf(cleanable[j])
		if ri != rj {
			return ri < rj
		}
		return cleanable[i].CreationTimestamp.Before(&cleanable[j].CreationTimestamp)
	})
	for _, rs := range cleanable[:diff] {
		if rs.Status.Replicas != 0 || replicasOf(rs.Spec.Replicas) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rs.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

// calculateStatus sums the ReplicaSets into the deployment's status and
// sets the Available condition.
func (c *Controller) calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	available := sumStatus(all, func(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
	unavailable := max(sumSpecReplicas(all)-available, 0)
	status := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sumStatus(all, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		UpdatedReplicas:     sumStatus([]*appsv1.ReplicaSet{newRS}, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		ReadyReplicas:       sumStatus(all, func(s *appsv1.ReplicaSetStatus) int32 { return s.ReadyReplicas }),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	now := c.clock.Now()
	if available >= replicasOf(d.Spec.Replicas)-maxUnavailable(d) {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability.", now))
	}
	return status
}

// syncStatus writes the counted status, without judging progress.
func (c *Controller) syncStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	status := c.calculateStatus(all, newRS, d)
	if reflect.DeepEqual(d.Status, status) {
		return nil
	}
	d.Status = status
	return c.updateStatus(ctx, d)
}

// syncRolloutStatus writes the status and judges progress against the
// deadline: complete, progressing, or ProgressDeadlineExceeded.
func (c *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	status := c.calculateStatus(all, newRS, d)
	now := c.clock.Now()
	if !hasProgressDeadline(d) {
		removeCondition(&status, appsv1.DeploymentProgressing)
	}
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	alreadyComplete := status.Replicas == status.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewReplicaSetAvailable
	if hasProgressDeadline(d) && !alreadyComplete {
		switch {
		case complete(d, &status):
			msg := "Deployment has successfully progressed."
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)
			}
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable, msg, now))
		case progressing(d, &status):
			msg := "Deployment is progressing."
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name)
			}
			cond := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, msg, now)
			// Progress refreshes lastUpdateTime (the deadline counts from it)
			// but a True condition keeps its transition time.
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					cond.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&status, appsv1.DeploymentProgressing)
			}
			status.Conditions = append(status.Conditions, cond)
		case timedOut(d, &status, now):
			msg := "Deployment has timed out progressing."
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
			}
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded, msg, now))
		}
	}
	if failure := replicaFailure(all, newRS); failure != nil {
		setCondition(&status, *failure)
	} else {
		removeCondition(&status, appsv1.DeploymentReplicaFailure)
	}
	if reflect.DeepEqual(d.Status, status) {
		c.requeueStuck(d, &status, now)
		return nil
	}
	d.Status = status
	return c.updateStatus(ctx, d)
}

// requeueStuck resyncs a deployment when its progress deadline would pass,
// since no event may arrive to notice it.
func (c *Controller) requeueStuck(d *appsv1.Deployment, status *appsv1.DeploymentStatus, now time.Time) {
	cond := getCondition(status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cond == nil || complete(d, status) || timedOut(d, status, now) {
		return
	}
	after := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	if after < time.Second {
		c.requeueAfter(d, 0)
		return
	}
	c.requeueAfter(d, after+time.Second)
}

// replicaFailure surfaces a ReplicaSet's ReplicaFailure (new one first).
func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	ordered := append([]*appsv1.ReplicaSet{newRS}, all...)
	for _, rs := range ordered {
		if rs == nil {
			continue
		}
		for _, cond := range rs.Status.Conditions {
			if cond.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: cond.Status, Reason: cond.Reason,
					Message: cond.Message, LastUpdateTime: cond.LastTransitionTime, LastTransitionTime: cond.LastTransitionTime}
			}
		}
	}
	return nil
}
