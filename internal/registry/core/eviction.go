package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

var pdbResource = schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}

// budgetAttempts bounds how often an eviction re-reads a budget whose status changed between its
// read and its update; each conflict means another eviction spent or the disruption controller
// refreshed it, so the next read decides afresh. When all lose, the answer is the 429 a client
// retries later.
const budgetAttempts = 5

// podEvictionAction serves pods/eviction: the pod is deleted unless a PodDisruptionBudget covering
// it allows no disruption, as Kubernetes' EvictionREST does.
func podEvictionAction() *registry.Action {
	return typedAction(policyv1.SchemeGroupVersion.WithKind("Eviction"), createEviction)
}

// createEviction admits the Eviction once the pod is known to exist, spends a disruption of the
// pod's budget when the pod counts towards it, marks the pod DisruptionTarget and deletes it with
// the Eviction's DeleteOptions.
func createEviction(ctx context.Context, env registry.ActionEnv, req registry.ActionRequest, eviction *policyv1.Eviction) (runtime.Object, error) {
	opts := evictionDeleteOptions(eviction, req.DryRun)
	dryRun := len(opts.DryRun) > 0
	pods, pod, err := getParent[*corev1.Pod](ctx, env, podsResource, req, false)
	if err != nil {
		return nil, err
	}
	if err := req.AdmitBody(ctx, eviction, dryRun); err != nil {
		return nil, err
	}
	if countsTowardsBudget(pod) {
		asUnhealthy, err := consumeDisruption(ctx, env, pod, dryRun)
		if err != nil {
			return nil, err
		}
		if asUnhealthy && opts.Preconditions == nil {
			// An unready pod evicted without spending its budget's disruption is deleted only as
			// it was judged: unready still (upstream pins the delete to the pod's version too).
			rv := pod.ResourceVersion
			opts.Preconditions = &metav1.Preconditions{ResourceVersion: &rv}
		}
	}
	if !dryRun {
		if opts, err = markDisruptionTarget(ctx, pods, env.Clock.Now(), req.Namespace, req.Name, opts); err != nil {
			return nil, err
		}
	}
	if err := pods.Delete(ctx, req.Namespace, req.Name, opts); err != nil {
		return nil, err
	}
	return createdStatus(), nil
}

// evictionDeleteOptions are the options the pod is deleted with: the Eviction's own, with the
// request's ?dryRun=All added when the body did not ask for it.
func evictionDeleteOptions(eviction *policyv1.Eviction, dryRun bool) *metav1.DeleteOptions {
	opts := &metav1.DeleteOptions{}
	if eviction.DeleteOptions != nil {
		opts = eviction.DeleteOptions.DeepCopy()
	}
	if dryRun && len(opts.DryRun) == 0 {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return opts
}

// countsTowardsBudget reports whether evicting pod needs a budget's consent: pods that are not
// running (pending, finished) or already going away are evicted without consulting budgets.
func countsTowardsBudget(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return false
	}
	return true
}

// errTooManyBudgets is Kubernetes' answer to a pod two budgets select.
//
//lint:ignore ST1005 Kubernetes' wording, which clients match.
var errTooManyBudgets = errors.New("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")

// budgetFor is the one budget of list covering pod, nil when none does; a pod selected by two
// budgets cannot be evicted (500, as in Kubernetes). Budgets with an empty or broken selector
// select nothing.
func budgetFor(pod *corev1.Pod, list []policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
	var found *policyv1.PodDisruptionBudget
	for i := range list {
		sel, err := metav1.LabelSelectorAsSelector(list[i].Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if found != nil {
			return nil, apierrors.NewInternalError(errTooManyBudgets)
		}
		found = &list[i]
	}
	return found, nil
}

// disruptionRefused is the 429 of a budget that allows no disruption now, with the budget's cause,
// as Kubernetes answers; nil when it allows one. A status the disruption controller has not
// computed for the budget's current generation allows none.
func disruptionRefused(pdb *policyv1.PodDisruptionBudget) error {
	if pdb.Status.ObservedGeneration >= pdb.Generation && pdb.Status.DisruptionsAllowed > 0 {
		return nil
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
		Message: "Cannot evict pod as it would violate the pod's disruption budget.",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
			Type:    policyv1.DisruptionBudgetCause,
			Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy),
		}}},
	}}
}

// spendDisruption takes one allowed disruption from pdb for pod (its status, which the update
// writes), or refuses as disruptionRefused does.
func spendDisruption(pdb *policyv1.PodDisruptionBudget, pod string, now time.Time) error {
	if err := disruptionRefused(pdb); err != nil {
		return err
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[pod] = metav1.NewTime(now)
	return nil
}

// unhealthyEvictable reports whether pod, not ready, may be evicted without spending a disruption
// of pdb: its unhealthyPodEvictionPolicy is AlwaysAllow, or (IfHealthyBudget, the default) the
// budget has the healthy pods it wants, so the unready one disrupts nothing, as upstream judges.
func unhealthyEvictable(pod *corev1.Pod, pdb *policyv1.PodDisruptionBudget) bool {
	if podReady(pod) {
		return false
	}
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// consumeDisruption finds the budget covering pod and takes one allowed disruption from it, or
// lets an unready pod go without (asUnhealthy, unhealthyEvictable); a dry run only checks that
// one is allowed. The update is conditional on the budget's resourceVersion as read: a conflict
// (the store's) means the budget changed, so it is read and judged again.
func consumeDisruption(ctx context.Context, env registry.ActionEnv, pod *corev1.Pod, dryRun bool) (asUnhealthy bool, err error) {
	if env.Stores == nil {
		return false, nil
	}
	pdbs, ok := env.Stores.Store(pdbResource)
	if !ok {
		// A server without budgets has none to respect.
		return false, nil
	}
	for range budgetAttempts {
		var pdb *policyv1.PodDisruptionBudget
		if pdb, err = readBudget(ctx, pdbs, pod); err != nil || pdb == nil {
			return false, err
		}
		if unhealthyEvictable(pod, pdb) {
			return true, nil
		}
		// Judged on the read first, so a refusal costs no write; the update judges again.
		if err := disruptionRefused(pdb); err != nil || dryRun {
			return false, err
		}
		rv := pdb.ResourceVersion
		err = pdbs.Modify(ctx, pdb.Namespace, pdb.Name, &metav1.Preconditions{ResourceVersion: &rv}, false, func(current runtime.Object) (runtime.Object, error) {
			next, ok := current.(*policyv1.PodDisruptionBudget)
			if !ok {
				return nil, apierrors.NewInternalError(fmt.Errorf("poddisruptionbudgets store returned %T", current))
			}
			if err := spendDisruption(next, pod.Name, env.Clock.Now()); err != nil {
				return nil, err
			}
			return next, nil
		})
		if !apierrors.IsConflict(err) {
			return false, err
		}
	}
	// Every attempt lost to another writer: the budget is contended, ask the client to retry.
	return false, apierrors.NewTooManyRequests(fmt.Sprintf("Cannot evict pod: the disruption budget changed %d times while it was being updated: %v", budgetAttempts, err), 1)
}

// readBudget reads the budgets of pod's namespace and picks the one covering pod.
func readBudget(ctx context.Context, pdbs registry.ObjectStore, pod *corev1.Pod) (*policyv1.PodDisruptionBudget, error) {
	listObj, err := pdbs.List(ctx, pod.Namespace)
	if err != nil {
		return nil, err
	}
	list, ok := listObj.(*policyv1.PodDisruptionBudgetList)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("poddisruptionbudgets store returned %T", listObj))
	}
	return budgetFor(pod, list.Items)
}

// markDisruptionTarget records on the pod's status why it goes, before the eviction deletes it, as
// Kubernetes does: condition DisruptionTarget=True, reason EvictionByEvictionAPI. Controllers read
// it (a Job's podFailurePolicy onPodConditions rule). The eviction's own preconditions apply to
// this write; a resourceVersion precondition then moves to the version this write produced, since
// the delete must not fail on our own change.
func markDisruptionTarget(ctx context.Context, pods registry.ObjectStore, now time.Time, namespace, name string, opts *metav1.DeleteOptions) (*metav1.DeleteOptions, error) {
	out, err := pods.GuaranteedUpdate(ctx, namespace, name, opts.Preconditions, false, func(current runtime.Object) (runtime.Object, error) {
		pod, ok := current.(*corev1.Pod)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("pods store returned %T", current))
		}
		setPodCondition(pod, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.NewTime(now),
		})
		return pod, nil
	})
	if err != nil {
		return nil, err
	}
	if opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil || *opts.Preconditions.ResourceVersion == "" {
		return opts, nil
	}
	m, err := apimeta.Accessor(out)
	if err != nil {
		return nil, err
	}
	opts = opts.DeepCopy()
	rv := m.GetResourceVersion()
	opts.Preconditions.ResourceVersion = &rv
	return opts, nil
}
