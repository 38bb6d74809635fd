package openapi

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
	}}
}

func (b *podBuilder) container(name, image string) *podBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: name, Image: image})
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.pod }

func TestTypeConverterConvertsBuiltins(t *testing.T) {
	svc, _ := newTestServer(t)
	converter := svc.TypeConverter()

	deployment := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       makePod("").container("nginx", "nginx:1.27").obj().Spec,
			},
		},
	}
	for _, obj := range []runtime.Object{makePod("p").container("app", "busybox").obj(), deployment} {
		typed, err := converter.ObjectToTyped(obj)
		if err != nil {
			t.Fatalf("ObjectToTyped(%T): %v", obj, err)
		}
		back, err := converter.TypedToObject(typed)
		if err != nil {
			t.Fatalf("TypedToObject(%T): %v", obj, err)
		}
		if got := back.GetObjectKind().GroupVersionKind(); got != obj.GetObjectKind().GroupVersionKind() {
			t.Errorf("round trip kind = %v, want %v", got, obj.GetObjectKind().GroupVersionKind())
		}
	}

	// Unknown fields are refused, which is what makes apply strict.
	bad := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]interface{}{"name": "p"},
		"spec":     map[string]interface{}{"containerz": []interface{}{}},
	}}
	if _, err := converter.ObjectToTyped(bad); err == nil {
		t.Errorf("a pod with spec.containerz converted without error")
	}
}

// TestApplyMergesContainersByName is the server-side apply case that needs the list-map keys: an
// applied configuration naming one container changes that container and leaves the others.
func TestApplyMergesContainersByName(t *testing.T) {
	svc, _ := newTestServer(t)
	converter := svc.TypeConverter()

	live, err := converter.ObjectToTyped(makePod("p").container("app", "app:1").container("sidecar", "proxy:1").obj())
	if err != nil {
		t.Fatalf("live: %v", err)
	}
	applied, err := converter.ObjectToTyped(makePod("p").container("app", "app:2").obj())
	if err != nil {
		t.Fatalf("applied: %v", err)
	}
	merged, err := live.Merge(applied)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	obj, err := converter.TypedToObject(merged)
	if err != nil {
		t.Fatalf("TypedToObject: %v", err)
	}
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, &pod); err != nil {
		t.Fatalf("to Pod: %v", err)
	}
	images := map[string]string{}
	for _, c := range pod.Spec.Containers {
		images[c.Name] = c.Image
	}
	want := map[string]string{"app": "app:2", "sidecar": "proxy:1"}
	if len(images) != len(want) || images["app"] != want["app"] || images["sidecar"] != want["sidecar"] {
		t.Errorf("merged containers = %v, want %v", images, want)
	}

	// The managed fields of the applied object key the container by name.
	set, err := applied.ToFieldSet()
	if err != nil {
		t.Fatalf("ToFieldSet: %v", err)
	}
	if got := set.String(); !strings.Contains(got, `.spec.containers[name="app"].image`) {
		t.Errorf("field set %s lacks the container keyed by name", got)
	}
}
