package core

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

// runningPod is a running, ready pod of app web.
func runningPod(name string) *corev1.Pod {
	return makePod(name).node("n1").with(func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}).obj()
}

// unreadyPod is runningPod without readiness.
func unreadyPod(name string) *corev1.Pod {
	p := runningPod(name)
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	return p
}

func budget(name string, allowed int32, mods ...func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Generation: 1, ResourceVersion: "7"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, DesiredHealthy: 2, CurrentHealthy: 2 + allowed},
	}
	for _, m := range mods {
		m(pdb)
	}
	return pdb
}

func TestPodEviction(t *testing.T) {
	tests := []struct {
		name     string
		objs     []runtime.Object
		eviction *policyv1.Eviction
		dryRun   bool // the request's ?dryRun
		// conflicts makes the budget's next updates lose to another writer.
		conflicts int
		refuse    error // admission's answer
		// code 0 is success: the pod is deleted (or would be, under dry run).
		code        int32
		message     string
		causeType   metav1.CauseType
		wantWrites  []string
		wantAllowed int32 // the budget's disruptionsAllowed afterwards, when there is one
		wantAdmit   bool
	}{
		{name: "no budget", objs: []runtime.Object{runningPod("web")},
			wantWrites: []string{"update pods web", "delete pods web"}, wantAdmit: true},
		{name: "a budget that allows one spends it", objs: []runtime.Object{runningPod("web"), budget("guard", 1)},
			wantWrites: []string{"update poddisruptionbudgets guard", "update pods web", "delete pods web"}, wantAllowed: 0, wantAdmit: true},
		{name: "a budget that allows none", objs: []runtime.Object{runningPod("web"), budget("guard", 0)},
			code: 429, message: "Cannot evict pod as it would violate the pod's disruption budget.", causeType: policyv1.DisruptionBudgetCause,
			wantAllowed: 0, wantAdmit: true},
		{name: "a budget whose status is behind its spec", objs: []runtime.Object{runningPod("web"), budget("guard", 3, func(p *policyv1.PodDisruptionBudget) { p.Generation = 2 })},
			code: 429, causeType: policyv1.DisruptionBudgetCause, wantAllowed: 3, wantAdmit: true},
		{name: "an unready pod under AlwaysAllow goes without spending", objs: []runtime.Object{unreadyPod("web"), budget("guard", 0, func(p *policyv1.PodDisruptionBudget) {
			p.Spec.UnhealthyPodEvictionPolicy = ptrTo(policyv1.AlwaysAllow)
			p.Status.CurrentHealthy, p.Status.DesiredHealthy = 0, 3
		})},
			wantWrites: []string{"update pods web", "delete pods web"}, wantAllowed: 0, wantAdmit: true},
		{name: "an unready pod of a budget that has its healthy pods goes without spending", objs: []runtime.Object{unreadyPod("web"), budget("guard", 0)},
			wantWrites: []string{"update pods web", "delete pods web"}, wantAllowed: 0, wantAdmit: true},
		{name: "an unready pod of a budget short of healthy pods (IfHealthyBudget) is refused", objs: []runtime.Object{unreadyPod("web"), budget("guard", 0, func(p *policyv1.PodDisruptionBudget) {
			p.Spec.UnhealthyPodEvictionPolicy = ptrTo(policyv1.IfHealthyBudget)
			p.Status.CurrentHealthy, p.Status.DesiredHealthy = 1, 3
		})},
			code: 429, causeType: policyv1.DisruptionBudgetCause, wantAllowed: 0, wantAdmit: true},
		{name: "a pending pod ignores budgets", objs: []runtime.Object{makePod("web").with(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"}; p.Status.Phase = corev1.PodPending }).obj(), budget("guard", 0)},
			wantWrites: []string{"update pods web", "delete pods web"}, wantAllowed: 0, wantAdmit: true},
		{name: "a budget selecting other pods", objs: []runtime.Object{runningPod("web"), budget("guard", 0, func(p *policyv1.PodDisruptionBudget) { p.Spec.Selector.MatchLabels = map[string]string{"app": "db"} })},
			wantWrites: []string{"update pods web", "delete pods web"}, wantAllowed: 0, wantAdmit: true},
		{name: "two budgets", objs: []runtime.Object{runningPod("web"), budget("a", 1), budget("b", 1)},
			code: 500, message: "more than one PodDisruptionBudget", wantAdmit: true},
		{name: "dry run in the deleteOptions checks the budget only", objs: []runtime.Object{runningPod("web"), budget("guard", 1)},
			eviction:   &policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}},
			wantWrites: []string{"delete pods web (dry run)"}, wantAllowed: 1, wantAdmit: true},
		{name: "dry run on the request", objs: []runtime.Object{runningPod("web"), budget("guard", 1)}, dryRun: true,
			wantWrites: []string{"delete pods web (dry run)"}, wantAllowed: 1, wantAdmit: true},
		{name: "dry run still refuses what the budget forbids", objs: []runtime.Object{runningPod("web"), budget("guard", 0)}, dryRun: true,
			code: 429, causeType: policyv1.DisruptionBudgetCause, wantAllowed: 0, wantAdmit: true},
		{name: "a conflict on the budget is retried on a fresh read", objs: []runtime.Object{runningPod("web"), budget("guard", 2)}, conflicts: 2,
			wantWrites:  []string{"update poddisruptionbudgets guard", "update poddisruptionbudgets guard", "update poddisruptionbudgets guard", "update pods web", "delete pods web"},
			wantAllowed: 1, wantAdmit: true},
		{name: "a budget that keeps changing", objs: []runtime.Object{runningPod("web"), budget("guard", 2)}, conflicts: budgetAttempts,
			code: 429, message: "the disruption budget changed", wantAllowed: 2, wantAdmit: true,
			wantWrites: slices.Repeat([]string{"update poddisruptionbudgets guard"}, budgetAttempts)},
		{name: "admission refuses", objs: []runtime.Object{runningPod("web"), budget("guard", 1)}, refuse: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", errors.New("no")),
			code: 403, wantAllowed: 1, wantAdmit: true},
		{name: "no such pod", objs: []runtime.Object{budget("guard", 1)}, code: 404, message: `pods "web" not found`, wantAllowed: 1},
		{name: "a stale resourceVersion precondition is the store's conflict", objs: []runtime.Object{runningPod("web")},
			eviction: &policyv1.Eviction{DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptrTo("0")}}},
			code:     409, message: "Precondition failed: ResourceVersion in precondition: 0",
			wantWrites: []string{"update pods web"}, wantAdmit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stores := newFixtureStores(tt.objs...)
			stores.stores[pdbResource].conflicts = tt.conflicts
			eviction := tt.eviction
			if eviction == nil {
				eviction = &policyv1.Eviction{}
			}
			eviction.Name, eviction.Namespace = "web", "default"
			adm := &admissionRecorder{refuse: tt.refuse}
			out, err := runAction(t, "pods", "eviction", fixtureEnv(stores),
				registry.ActionRequest{Namespace: "default", Name: "web", Body: eviction, DryRun: tt.dryRun, Admit: adm.admit})
			if !slices.Equal(stores.writes(), tt.wantWrites) {
				t.Errorf("writes %q, want %q", stores.writes(), tt.wantWrites)
			}
			if (len(adm.seen) == 1) != tt.wantAdmit {
				t.Errorf("admission saw %d requests, want it called: %v", len(adm.seen), tt.wantAdmit)
			}
			if pdb, ok := stores.object(pdbResource, "default", "guard").(*policyv1.PodDisruptionBudget); ok && pdb.Status.DisruptionsAllowed != tt.wantAllowed {
				t.Errorf("budget allows %d disruptions afterwards, want %d", pdb.Status.DisruptionsAllowed, tt.wantAllowed)
			}
			if tt.code != 0 {
				wantStatus(t, err, tt.code, tt.message)
				if tt.causeType != "" {
					s := err.(apierrors.APIStatus).Status()
					if s.Reason != metav1.StatusReasonTooManyRequests || s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0].Type != tt.causeType {
						t.Errorf("want reason TooManyRequests with a %s cause, got %+v", tt.causeType, s)
					}
				}
				return
			}
			wantCreated(t, out, err)
		})
	}
}

// TestPodEvictionMarksAndPassesOptions: the pod is marked DisruptionTarget before it goes, the
// Eviction's DeleteOptions reach the delete, a resourceVersion precondition follows the mark's own
// write, and the budget records the pod it let go.
func TestPodEvictionMarksAndPassesOptions(t *testing.T) {
	pod := runningPod("web")
	pod.ResourceVersion = "5"
	stores := newFixtureStores(pod, budget("guard", 1))
	grace := int64(7)
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{ResourceVersion: ptrTo("5")}}}
	out, err := runAction(t, "pods", "eviction", fixtureEnv(stores), registry.ActionRequest{Namespace: "default", Name: "web", Body: eviction})
	wantCreated(t, out, err)
	var deleted *storeCall
	for i, c := range stores.calls {
		if c.verb == "delete" {
			deleted = &stores.calls[i]
		}
	}
	if deleted == nil || deleted.options.GracePeriodSeconds == nil || *deleted.options.GracePeriodSeconds != 7 {
		t.Fatalf("delete call %+v, want the eviction's grace period", deleted)
	}
	gone := stores.object(podsResource, "default", "web").(*corev1.Pod)
	var target *corev1.PodCondition
	for i, c := range gone.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			target = &gone.Status.Conditions[i]
		}
	}
	if target == nil || target.Status != corev1.ConditionTrue || target.Reason != "EvictionByEvictionAPI" || target.Message != "Eviction API: evicting" {
		t.Errorf("DisruptionTarget condition %+v", target)
	}
	if gone.DeletionTimestamp == nil {
		t.Errorf("the pod was not deleted gracefully")
	}
	if rv := deleted.options.Preconditions.ResourceVersion; rv == nil || *rv != gone.ResourceVersion {
		t.Errorf("the delete's resourceVersion precondition %v did not follow the DisruptionTarget write", rv)
	}
	if *eviction.DeleteOptions.Preconditions.ResourceVersion != "5" {
		t.Errorf("the request's own options were changed")
	}
	pdb := stores.object(pdbResource, "default", "guard").(*policyv1.PodDisruptionBudget)
	if ts, ok := pdb.Status.DisruptedPods["web"]; !ok || !ts.Time.Equal(actionEpoch) {
		t.Errorf("disruptedPods %v, want web at %v", pdb.Status.DisruptedPods, actionEpoch)
	}
}
