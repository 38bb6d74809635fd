package disruption

import (
	"context"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "disruption"

// DeletionTimeout: an eviction not followed by the pod's deletion within this
// long is forgotten, and the pod counts as healthy again.
const DeletionTimeout = 2 * time.Minute

// Controller keeps PodDisruptionBudget status.
type Controller struct {
	client    kubernetes.Interface
	pdbLister policylisters.PodDisruptionBudgetLister
	podLister corelisters.PodLister
	rsLister  appslisters.ReplicaSetLister
	dLister   appslisters.DeploymentLister
	stsLister appslisters.StatefulSetLister
	clock     clock.PassiveClock
	loop      *ctrlutil.Loop
	synced    []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	f := deps.Informers
	c := &Controller{
		client:    deps.Client,
		pdbLister: f.Policy().V1().PodDisruptionBudgets().Lister(),
		podLister: f.Core().V1().Pods().Lister(),
		rsLister:  f.Apps().V1().ReplicaSets().Lister(),
		dLister:   f.Apps().V1().Deployments().Lister(),
		stsLister: f.Apps().V1().StatefulSets().Lister(),
		clock:     deps.Clock,
		synced: []cache.InformerSynced{f.Policy().V1().PodDisruptionBudgets().Informer().HasSynced, f.Core().V1().Pods().Informer().HasSynced,
			f.Apps().V1().ReplicaSets().Informer().HasSynced, f.Apps().V1().Deployments().Informer().HasSynced, f.Apps().V1().StatefulSets().Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	podEvent := func(o any) {
		if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = tomb.Obj
		}
		if p, ok := o.(*corev1.Pod); ok {
			c.enqueueForPod(p)
		}
	}
	// A controller's scale changes the expected pod count of its budgets.
	scaleEvent := func(o any) {
		if m, ok := o.(metav1.Object); ok {
			c.enqueueNamespace(m.GetNamespace())
		}
	}
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{f.Policy().V1().PodDisruptionBudgets().Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.loop.Enqueue, UpdateFunc: func(_, o any) { c.loop.Enqueue(o) }}},
		{f.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{AddFunc: podEvent, UpdateFunc: func(_, o any) { podEvent(o) }, DeleteFunc: podEvent}},
		{f.Apps().V1().ReplicaSets().Informer(), cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { scaleEvent(o) }}},
		{f.Apps().V1().Deployments().Informer(), cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { scaleEvent(o) }}},
		{f.Apps().V1().StatefulSets().Informer(), cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { scaleEvent(o) }}},
	} {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("disruption controller handler: %w", err)
		}
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

func (c *Controller) enqueueForPod(pod *corev1.Pod) {
	pdbs, err := c.pdbLister.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && pdb.Spec.Selector != nil && sel.Matches(labels.Set(pod.Labels)) {
			c.loop.Enqueue(pdb)
		}
	}
}

func (c *Controller) enqueueNamespace(namespace string) {
	pdbs, err := c.pdbLister.PodDisruptionBudgets(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		c.loop.Enqueue(pdb)
	}
}

// Sync recomputes the status of one PDB.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.pdbLister.PodDisruptionBudgets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get poddisruptionbudget %s: %w", key, err)
	}
	pdb := cached.DeepCopy()
	now := c.clock.Now()
	var pods []*corev1.Pod
	if pdb.Spec.Selector != nil { // nil selects nothing in policy/v1; {} selects all
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			return c.writeStatus(ctx, pdb, failedStatus(pdb, fmt.Sprintf("invalid selector: %v", err), now))
		}
		if pods, err = c.podLister.Pods(namespace).List(sel); err != nil {
			return fmt.Errorf("list pods of %s: %w", key, err)
		}
	}
	expected, desired, err := c.expectations(pdb, pods)
	if err != nil {
		return c.writeStatus(ctx, pdb, failedStatus(pdb, err.Error(), now))
	}

	disrupted := map[string]metav1.Time{}
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	for podName, at := range pdb.Status.DisruptedPods {
		p, ok := byName[podName]
		if !ok || p.DeletionTimestamp != nil || now.Sub(at.Time) > DeletionTimeout {
			continue
		}
		disrupted[podName] = at
	}
	var healthy int32
	for _, p := range pods {
		if p.DeletionTimestamp == nil && ctrlutil.IsPodReady(p) {
			if _, evicted := disrupted[p.Name]; !evicted {
				healthy++
			}
		}
	}
	status := pdb.Status.DeepCopy()
	status.ObservedGeneration = pdb.Generation
	status.ExpectedPods = expected
	status.DesiredHealthy = desired
	status.CurrentHealthy = healthy
	status.DisruptionsAllowed = max(healthy-desired, 0)
	status.DisruptedPods = disrupted
	if len(disrupted) == 0 {
		status.DisruptedPods = nil
	}
	if status.DisruptionsAllowed > 0 {
		setCondition(status, metav1.ConditionTrue, policyv1.SufficientPodsReason, "", now)
	} else {
		setCondition(status, metav1.ConditionFalse, policyv1.InsufficientPodsReason, "", now)
	}
	// Re-check when the oldest eviction entry times out.
	for _, at := range disrupted {
		c.loop.EnqueueAfter(key, at.Add(DeletionTimeout).Sub(now)+time.Second)
	}
	return c.writeStatus(ctx, pdb, status)
}

func failedStatus(pdb *policyv1.PodDisruptionBudget, msg string, now time.Time) *policyv1.PodDisruptionBudgetStatus {
	status := pdb.Status.DeepCopy()
	status.ObservedGeneration = pdb.Generation
	status.DisruptionsAllowed = 0
	setCondition(status, metav1.ConditionFalse, policyv1.SyncFailedReason, msg, now)
	return status
}

func setCondition(status *policyv1.PodDisruptionBudgetStatus, s metav1.ConditionStatus, reason, msg string, now time.Time) {
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != policyv1.DisruptionAllowedCondition {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = s, reason, msg
		return
	}
	status.Conditions = append(status.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: s,
		Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now)})
}

func (c *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, status *policyv1.PodDisruptionBudgetStatus) error {
	for i := range status.Conditions {
		status.Conditions[i].ObservedGeneration = pdb.Generation
	}
	if reflect.DeepEqual(&pdb.Status, status) {
		return nil
	}
	pdb.Status = *status
	if _, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of poddisruptionbudget %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	return nil
}

// expectations computes expectedPods and desiredHealthy. A plain integer
// minAvailable needs only the pod count; percentages and maxUnavailable need
// the summed scale of the pods' controllers.
func (c *Controller) expectations(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, err error) {
	if ma := pdb.Spec.MinAvailable; ma != nil && ma.Type == intstr.Int && pdb.Spec.MaxUnavailable == nil {
		return int32(len(pods)), ma.IntVal, nil
	}
	expected, err = c.controllersScale(pods)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		u, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
		}
		return expected, max(expected-int32(u), 0), nil
	case pdb.Spec.MinAvailable != nil:
		m, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, fmt.Errorf("minAvailable: %w", err)
		}
		return expected, int32(m), nil
	}
	return expected, expected, nil
}

// controllersScale sums the replicas of the distinct controllers of pods.
func (c *Controller) controllersScale(pods []*corev1.Pod) (int32, error) {
	seen := map[types.UID]bool{}
	var total int32
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			return 0, fmt.Errorf("found no controller ref for pod %q", p.Name)
		}
		scale, uid, err := c.scaleOf(p.Namespace, ref)
		if err != nil {
			return 0, err
		}
		if !seen[uid] {
			seen[uid] = true
			total += scale
		}
	}
	return total, nil
}

func (c *Controller) scaleOf(namespace string, ref *metav1.OwnerReference) (int32, types.UID, error) {
	switch ref.Kind {
	case "ReplicaSet":
		rs, err := c.rsLister.ReplicaSets(namespace).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return 0, "", fmt.Errorf("controller ReplicaSet %s of a selected pod not found", ref.Name)
		}
		// A Deployment's ReplicaSets share its scale.
		if dref := metav1.GetControllerOf(rs); dref != nil && dref.Kind == "Deployment" {
			if d, err := c.dLister.Deployments(namespace).Get(dref.Name); err == nil && d.UID == dref.UID {
				return ptr.Deref(d.Spec.Replicas, 1), d.UID, nil
			}
		}
		return ptr.Deref(rs.Spec.Replicas, 1), rs.UID, nil
	case "StatefulSet":
		sts, err := c.stsLister.StatefulSets(namespace).Get(ref.Name)
		if err != nil || sts.UID != ref.UID {
			return 0, "", fmt.Errorf("controller StatefulSet %s of a selected pod not found", ref.Name)
		}
		return ptr.Deref(sts.Spec.Replicas, 1), sts.UID, nil
	}
	return 0, "", fmt.Errorf("pods controlled by %s %s have no scale; use an integer minAvailable", ref.Kind, ref.Name)
}
