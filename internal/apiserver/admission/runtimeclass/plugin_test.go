package runtimeclass

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

// classLookup serves RuntimeClasses by name.
type classLookup map[string]*nodev1.RuntimeClass

func (l classLookup) Get(_ context.Context, group, res, _, name string) (runtime.Object, error) {
	if rc, ok := l[name]; ok && res == "runtimeclasses" {
		return rc, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: res}, name)
}

func (classLookup) List(context.Context, string, string, string) (runtime.Object, error) {
	return &nodev1.RuntimeClassList{}, nil
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func podCreate(pod *corev1.Pod) *admission.Attributes {
	return &admission.Attributes{Verb: "create", Resource: &registry.Resource{Plural: "pods", Namespaced: true}, Namespace: "ns", Name: pod.Name, Object: pod}
}

// TestRuntimeClassAdmission: a missing class refuses the pod, a class's overhead and scheduling are
// merged into the pod's, and a pod that contradicts them is refused.
func TestRuntimeClassAdmission(t *testing.T) {
	lookup := classLookup{
		"kata": {ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
			Overhead:   &nodev1.Overhead{PodFixed: rl("cpu", "250m")},
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"}, Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists}}}},
	}
	name := func(s string) *string { return &s }
	tests := []struct {
		name    string
		spec    corev1.PodSpec
		wantErr string
	}{
		{name: "missing class is refused", spec: corev1.PodSpec{RuntimeClassName: name("nope")}, wantErr: `RuntimeClass "nope" not found`},
		{name: "overhead and scheduling merged", spec: corev1.PodSpec{RuntimeClassName: name("kata")}},
		{name: "conflicting node selector", spec: corev1.PodSpec{RuntimeClassName: name("kata"), NodeSelector: map[string]string{"sandbox": "no"}}, wantErr: "conflict"},
		{name: "other overhead", spec: corev1.PodSpec{RuntimeClassName: name("kata"), Overhead: rl("cpu", "1")}, wantErr: "doesn't match"},
		{name: "no class: untouched", spec: corev1.PodSpec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: tt.spec}
			err := (Plugin{}).Admit(context.Background(), podCreate(pod), lookup)
			if tt.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want Forbidden with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.spec.RuntimeClassName == nil {
				if pod.Spec.Overhead != nil || pod.Spec.NodeSelector != nil {
					t.Errorf("pod without a class changed: %+v", pod.Spec)
				}
				return
			}
			if q := pod.Spec.Overhead["cpu"]; q.String() != "250m" || pod.Spec.NodeSelector["sandbox"] != "yes" || len(pod.Spec.Tolerations) != 1 {
				t.Errorf("spec after admission: overhead %v, nodeSelector %v, tolerations %v", pod.Spec.Overhead, pod.Spec.NodeSelector, pod.Spec.Tolerations)
			}
		})
	}
}
