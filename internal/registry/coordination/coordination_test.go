package coordination

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func lease(mods ...func(*coordinationv1.Lease)) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("node-a"),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &metav1.MicroTime{},
		},
	}
	for _, m := range mods {
		m(l)
	}
	return l
}

func TestValidateLease(t *testing.T) {
	tests := []struct {
		name string
		obj  *coordinationv1.Lease
		want *errtest.Want
	}{
		{"valid", lease(), nil},
		{"coordinated", lease(func(l *coordinationv1.Lease) {
			l.Spec.Strategy = ptr.To(coordinationv1.OldestEmulationVersion)
			l.Spec.PreferredHolder = ptr.To("b")
		}), nil},
		{"zero duration", lease(func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr.To[int32](0) }), &errtest.Want{Field: "spec.leaseDurationSeconds", Type: field.ErrorTypeInvalid, Detail: "must be greater than 0"}},
		{"negative transitions", lease(func(l *coordinationv1.Lease) { l.Spec.LeaseTransitions = ptr.To[int32](-1) }), &errtest.Want{Field: "spec.leaseTransitions", Type: field.ErrorTypeInvalid, Detail: "must be greater than or equal to 0"}},
		{"unknown strategy", lease(func(l *coordinationv1.Lease) {
			l.Spec.Strategy = ptr.To(coordinationv1.CoordinatedLeaseStrategy("Newest"))
		}), &errtest.Want{Field: "spec.strategy", Type: field.ErrorTypeNotSupported}},
		{"preferred without strategy", lease(func(l *coordinationv1.Lease) { l.Spec.PreferredHolder = ptr.To("b") }), &errtest.Want{Field: "spec.preferredHolder", Type: field.ErrorTypeForbidden, Detail: "may only be specified if `strategy` is defined"}},
		{"no namespace", lease(func(l *coordinationv1.Lease) { l.Namespace = "" }), &errtest.Want{Field: "metadata.namespace", Type: field.ErrorTypeRequired}},
	}
	r := Resources()[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
	old := lease(func(l *coordinationv1.Lease) { l.ResourceVersion = "2" })
	renewed := old.DeepCopy()
	renewed.Spec.LeaseTransitions = ptr.To[int32](1)
	r.Strategy.PrepareForUpdate(context.Background(), renewed, old)
	if renewed.Generation != 0 {
		t.Fatalf("lease tracks generation: %d", renewed.Generation)
	}
	errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), renewed, old), nil)
	if !r.Strategy.AllowCreateOnUpdate() || r.Status != nil || !r.Namespaced || r.Plural != "leases" {
		t.Fatalf("resource = %+v", r)
	}
	if err := RegisterDefaults(runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
}
