package policy

import (
	"context"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func pdb(mods ...func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func TestValidatePDB(t *testing.T) {
	tests := []struct {
		name string
		obj  *policyv1.PodDisruptionBudget
		want *errtest.Want
	}{
		{"valid", pdb(), nil},
		{"percent max", pdb(func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MinAvailable = nil
			p.Spec.MaxUnavailable = ptr.To(intstr.FromString("50%"))
		}), nil},
		{"policy", pdb(func(p *policyv1.PodDisruptionBudget) {
			p.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
		}), nil},
		{"both", pdb(func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1)) }), &errtest.Want{Field: "spec", Type: field.ErrorTypeInvalid, Detail: "minAvailable and maxUnavailable cannot be both set"}},
		{"negative", pdb(func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromInt32(-1)) }), &errtest.Want{Field: "spec.minAvailable", Type: field.ErrorTypeInvalid, Detail: "must be greater than or equal to 0"}},
		{"over 100%", pdb(func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromString("150%")) }), &errtest.Want{Field: "spec.minAvailable", Type: field.ErrorTypeInvalid, Detail: "must not be greater than 100%"}},
		{"bad selector", pdb(func(p *policyv1.PodDisruptionBudget) { p.Spec.Selector.MatchLabels = map[string]string{"-": "x"} }), &errtest.Want{Field: "spec.selector.matchLabels", Type: field.ErrorTypeInvalid}},
		{"bad policy", pdb(func(p *policyv1.PodDisruptionBudget) {
			p.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.UnhealthyPodEvictionPolicyType("Never"))
		}), &errtest.Want{Field: "spec.unhealthyPodEvictionPolicy", Type: field.ErrorTypeNotSupported}},
	}
	r := Resources()[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestPDBStatus(t *testing.T) {
	ctx := context.Background()
	r := Resources()[0]
	if r.ShortNames[0] != "pdb" || r.Status == nil {
		t.Fatalf("resource = %+v", r)
	}
	created := pdb(func(p *policyv1.PodDisruptionBudget) { p.Status.DisruptionsAllowed = 4 })
	r.Strategy.PrepareForCreate(ctx, created)
	if created.Status.DisruptionsAllowed != 0 || created.Generation != 1 {
		t.Fatalf("create kept status or no generation: %+v", created)
	}
	old := pdb(func(p *policyv1.PodDisruptionBudget) { p.ResourceVersion = "1"; p.Generation = 1 })
	upd := old.DeepCopy()
	upd.Spec.MinAvailable = ptr.To(intstr.FromInt32(5))
	upd.Status.ExpectedPods = 3
	r.Status.PrepareForUpdate(ctx, upd, old)
	if upd.Spec.MinAvailable.IntValue() != 1 || upd.Status.ExpectedPods != 3 {
		t.Fatalf("status update: %+v", upd)
	}
	errtest.Check(t, r.Status.ValidateUpdate(ctx, upd, old), nil)
	bad := old.DeepCopy()
	bad.Status.DisruptionsAllowed = -1
	errtest.Check(t, r.Status.ValidateUpdate(ctx, bad, old), &errtest.Want{Field: "status.disruptionsAllowed", Type: field.ErrorTypeInvalid})
	badCond := old.DeepCopy()
	badCond.Status.Conditions = []metav1.Condition{{Type: "DisruptionAllowed", Status: "Maybe"}}
	errtest.Check(t, r.Status.ValidateUpdate(ctx, badCond, old), &errtest.Want{Field: "status.conditions[0].status", Type: field.ErrorTypeNotSupported})
}
