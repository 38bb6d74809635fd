package scheduling

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func class(name string, value int32, mods ...func(*schedulingv1.PriorityClass)) *schedulingv1.PriorityClass {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	DefaultPriorityClass(pc)
	for _, m := range mods {
		m(pc)
	}
	return pc
}

func TestDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := schedulingv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	pc := &schedulingv1.PriorityClass{}
	s.Default(pc)
	if *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Fatalf("preemptionPolicy = %v", *pc.PreemptionPolicy)
	}
}

func TestValidatePriorityClass(t *testing.T) {
	tests := []struct {
		name string
		obj  *schedulingv1.PriorityClass
		want *errtest.Want
	}{
		{"valid", class("high", 1000), nil},
		{"ceiling", class("top", HighestUserDefinablePriority), nil},
		{"never preempt", class("batch", 10, func(pc *schedulingv1.PriorityClass) { pc.PreemptionPolicy = ptr.To(corev1.PreemptNever) }), nil},
		{"above ceiling", class("top", HighestUserDefinablePriority+1), &errtest.Want{Field: "value", Type: field.ErrorTypeForbidden, Detail: "maximum allowed value of a user defined priority is 1000000000"}},
		{"reserved name", class("system-mine", 5), &errtest.Want{Field: "metadata.name", Type: field.ErrorTypeForbidden, Detail: "priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"}},
		{"system wrong value", class(SystemNodeCritical, 5), &errtest.Want{Field: "metadata.name", Type: field.ErrorTypeForbidden, Detail: "value of system-node-critical PriorityClass must be 2000001000"}},
		{"system globalDefault", class(SystemClusterCritical, SystemCriticalPriority, func(pc *schedulingv1.PriorityClass) { pc.GlobalDefault = true }), &errtest.Want{Field: "metadata.name", Type: field.ErrorTypeForbidden, Detail: "globalDefault of system-cluster-critical PriorityClass must be false"}},
		{"bad policy", class("x", 1, func(pc *schedulingv1.PriorityClass) {
			pc.PreemptionPolicy = ptr.To(corev1.PreemptionPolicy("Sometimes"))
		}), &errtest.Want{Field: "preemptionPolicy", Type: field.ErrorTypeNotSupported}},
		{"namespaced", class("x", 1, func(pc *schedulingv1.PriorityClass) { pc.Namespace = "default" }), &errtest.Want{Field: "metadata.namespace", Type: field.ErrorTypeForbidden}},
	}
	r := Resources()[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
	for _, sys := range SystemPriorityClasses() {
		errtest.Check(t, r.Strategy.Validate(context.Background(), sys), nil)
	}
}

func TestPriorityClassUpdate(t *testing.T) {
	ctx := context.Background()
	r := Resources()[0]
	old := class("high", 1000, func(pc *schedulingv1.PriorityClass) { pc.ResourceVersion = "1" })
	created := class("new", 5)
	r.Strategy.PrepareForCreate(ctx, created)
	if created.Generation != 1 {
		t.Fatalf("generation on create = %d", created.Generation)
	}
	described := old.DeepCopy()
	described.Description = "now documented"
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, described, old), nil)
	revalued := old.DeepCopy()
	revalued.Value = 2000
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, revalued, old), &errtest.Want{Field: "value", Type: field.ErrorTypeForbidden, Detail: "may not be changed in an update."})
	repolicied := old.DeepCopy()
	repolicied.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, repolicied, old), &errtest.Want{Field: "preemptionPolicy", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
}

func TestSystemPriorityClasses(t *testing.T) {
	got := map[string]int32{}
	for _, pc := range SystemPriorityClasses() {
		got[pc.Name] = pc.Value
	}
	if got["system-cluster-critical"] != 2000000000 || got["system-node-critical"] != 2000001000 || len(got) != 2 {
		t.Fatalf("system classes = %v", got)
	}
	if r := Resources()[0]; r.Namespaced || r.ShortNames[0] != "pc" {
		t.Fatalf("resource = %+v", r)
	}
}

func TestSystemClassesCannotBeDeleted(t *testing.T) {
	res := Resources()[0]
	dv, ok := res.Strategy.(registry.DeleteValidator)
	if !ok {
		t.Fatal("the PriorityClass strategy validates no deletes")
	}
	for _, name := range []string{SystemClusterCritical, SystemNodeCritical} {
		err := dv.ValidateDelete(context.Background(), "", name)
		if !apierrors.IsForbidden(err) || err.Error() != `priorityclasses.scheduling.k8s.io "`+name+`" is forbidden: this is a system priority class and cannot be deleted` {
			t.Errorf("delete %s: %v", name, err)
		}
	}
	if err := dv.ValidateDelete(context.Background(), "", "high"); err != nil {
		t.Errorf("delete a user class: %v", err)
	}
}
