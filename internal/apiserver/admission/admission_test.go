package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

// TestPodCreate: only a create of pods itself is a pod create; its subresources (binding, eviction,
// status), other verbs, other resources and other objects are not.
func TestPodCreate(t *testing.T) {
	pods := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "pods", Namespaced: true}
	metricsPods := &registry.Resource{GroupVersion: schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}, Plural: "pods", Namespaced: true}
	tests := []struct {
		name string
		a    Attributes
		want bool
	}{
		{"a pod create", Attributes{Verb: "create", Resource: pods, Object: &corev1.Pod{}}, true},
		{"an update", Attributes{Verb: "update", Resource: pods, Object: &corev1.Pod{}}, false},
		{"a binding", Attributes{Verb: "create", Resource: pods, Subresource: "binding", Object: &corev1.Binding{}}, false},
		{"the status", Attributes{Verb: "create", Resource: pods, Subresource: "status", Object: &corev1.Pod{}}, false},
		{"another group's pods", Attributes{Verb: "create", Resource: metricsPods, Object: &corev1.Pod{}}, false},
		{"not a pod", Attributes{Verb: "create", Resource: pods, Object: &corev1.ConfigMap{}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, ok := tt.a.PodCreate()
			if ok != tt.want || (ok && pod != tt.a.Object) {
				t.Errorf("PodCreate = %v, %v; want the object %v", pod, ok, tt.want)
			}
		})
	}
}
