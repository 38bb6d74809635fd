package node

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func runtimeClass(mods ...func(*nodev1.RuntimeClass)) *nodev1.RuntimeClass {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}
	for _, m := range mods {
		m(rc)
	}
	return rc
}

func TestValidateRuntimeClass(t *testing.T) {
	tests := []struct {
		name string
		obj  *nodev1.RuntimeClass
		want *errtest.Want
	}{
		{"valid", runtimeClass(), nil},
		{"overhead and scheduling", runtimeClass(func(rc *nodev1.RuntimeClass) {
			rc.Overhead = &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")}}
			rc.Scheduling = &nodev1.Scheduling{
				NodeSelector: map[string]string{"runtime": "gvisor"},
				Tolerations:  []corev1.Toleration{{Key: "runtime", Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoSchedule}},
			}
		}), nil},
		{"no handler", runtimeClass(func(rc *nodev1.RuntimeClass) { rc.Handler = "" }), &errtest.Want{Field: "handler", Type: field.ErrorTypeInvalid}},
		{"handler not a label", runtimeClass(func(rc *nodev1.RuntimeClass) { rc.Handler = "run.sc" }), &errtest.Want{Field: "handler", Type: field.ErrorTypeInvalid, Detail: "must not contain dots"}},
		{"negative overhead", runtimeClass(func(rc *nodev1.RuntimeClass) {
			rc.Overhead = &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}
		}), &errtest.Want{Field: "overhead.limits[cpu]", Type: field.ErrorTypeInvalid, Detail: "must be greater than or equal to 0"}},
		{"bad node selector", runtimeClass(func(rc *nodev1.RuntimeClass) {
			rc.Scheduling = &nodev1.Scheduling{NodeSelector: map[string]string{"-bad": "x"}}
		}), &errtest.Want{Field: "scheduling.nodeSelector", Type: field.ErrorTypeInvalid}},
		{"duplicate toleration", runtimeClass(func(rc *nodev1.RuntimeClass) {
			tol := corev1.Toleration{Key: "a", Operator: corev1.TolerationOpExists}
			rc.Scheduling = &nodev1.Scheduling{Tolerations: []corev1.Toleration{tol, tol}}
		}), &errtest.Want{Field: "scheduling.tolerations[1]", Type: field.ErrorTypeDuplicate}},
		{"bad toleration", runtimeClass(func(rc *nodev1.RuntimeClass) {
			rc.Scheduling = &nodev1.Scheduling{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "x"}}}
		}), &errtest.Want{Field: "scheduling.tolerations[0].operator", Type: field.ErrorTypeInvalid, Detail: "operator must be Exists when `key` is empty"}},
	}
	r := Resources()[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
	old := runtimeClass(func(rc *nodev1.RuntimeClass) { rc.ResourceVersion = "1" })
	upd := old.DeepCopy()
	upd.Handler = "kata"
	errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), upd, old), &errtest.Want{Field: "handler", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
	upd = old.DeepCopy()
	upd.Scheduling = &nodev1.Scheduling{NodeSelector: map[string]string{"a": "b"}}
	errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), upd, old), nil)
	if r.Namespaced || r.Status != nil || r.Plural != "runtimeclasses" {
		t.Fatalf("resource = %+v", r)
	}
	if err := RegisterDefaults(runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
}
