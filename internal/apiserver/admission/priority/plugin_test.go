package priority

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

// classLookup serves a fixed set of PriorityClasses.
type classLookup []schedulingv1.PriorityClass

func (l classLookup) Get(_ context.Context, group, resource, _, name string) (runtime.Object, error) {
	for i := range l {
		if l[i].Name == name && resource == "priorityclasses" {
			return &l[i], nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
}

func (l classLookup) List(context.Context, string, string, string) (runtime.Object, error) {
	return &schedulingv1.PriorityClassList{Items: l}, nil
}

func TestPriority(t *testing.T) {
	never, lower := corev1.PreemptNever, corev1.PreemptLowerPriority
	class := func(name string, value int32, globalDefault bool, policy *corev1.PreemptionPolicy) schedulingv1.PriorityClass {
		return schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault, PreemptionPolicy: policy}
	}
	classes := classLookup{class("high", 1000, false, nil), class("polite", 500, false, &never)}
	withDefault := append(classLookup{class("everyone", 7, true, &never)}, classes...)
	num := func(n int32) *int32 { return &n }
	tests := []struct {
		name    string
		classes classLookup
		spec    corev1.PodSpec
		// want is the pod's class, priority and policy after admission, or wantErr a part of the
		// Forbidden message.
		want    string
		wantErr string
	}{
		{name: "no class and no default: zero", classes: classes, want: " 0 PreemptLowerPriority"},
		{name: "no class: the global default", classes: withDefault, want: "everyone 7 Never"},
		{name: "its class", classes: withDefault, spec: corev1.PodSpec{PriorityClassName: "high"}, want: "high 1000 PreemptLowerPriority"},
		{name: "its class's policy", classes: classes, spec: corev1.PodSpec{PriorityClassName: "polite"}, want: "polite 500 Never"},
		{name: "the class's value given", classes: classes, spec: corev1.PodSpec{PriorityClassName: "high", Priority: num(1000)}, want: "high 1000 PreemptLowerPriority"},
		{name: "a missing class", classes: classes, spec: corev1.PodSpec{PriorityClassName: "gone"}, wantErr: "no PriorityClass with name gone was found"},
		{name: "another value given", classes: classes, spec: corev1.PodSpec{PriorityClassName: "high", Priority: num(5)},
			wantErr: "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"},
		{name: "another policy given", classes: classes, spec: corev1.PodSpec{PriorityClassName: "polite", PreemptionPolicy: &lower},
			wantErr: "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name"},
	}
	pods := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "pods", Namespaced: true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: tt.spec}
			err := (Plugin{}).Admit(context.Background(), &admission.Attributes{Verb: "create", Resource: pods, Namespace: "ns", Name: "p", Object: pod}, tt.classes)
			if tt.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Admit = %v, want Forbidden with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(pod.Spec); got != tt.want {
				t.Errorf("class, priority, policy = %q, want %q", got, tt.want)
			}
		})
	}
	// A pod's subresource (a binding, an eviction) is not the pod: nothing is resolved.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if err := (Plugin{}).Admit(context.Background(), &admission.Attributes{Verb: "create", Resource: pods, Subresource: "binding", Object: pod}, withDefault); err != nil || pod.Spec.Priority != nil {
		t.Errorf("a subresource create: err %v, priority %v", err, pod.Spec.Priority)
	}
}

func describe(spec corev1.PodSpec) string {
	priority, policy := "<nil>", "<nil>"
	if spec.Priority != nil {
		priority = fmt.Sprint(*spec.Priority)
	}
	if spec.PreemptionPolicy != nil {
		policy = string(*spec.PreemptionPolicy)
	}
	return spec.PriorityClassName + " " + priority + " " + policy
}
