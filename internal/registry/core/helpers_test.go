package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wantErr names one expected validation error: the field path, the type, and optionally a
// fragment of the detail that Kubernetes' wording requires.
type wantErr struct {
	field  string
	typ    field.ErrorType
	detail string
}

func requireNoErrors(t *testing.T, errs field.ErrorList) {
	t.Helper()
	if len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs.ToAggregate())
	}
}

func requireError(t *testing.T, errs field.ErrorList, want wantErr) {
	t.Helper()
	for _, e := range errs {
		if e.Field == want.field && e.Type == want.typ && strings.Contains(e.Error(), want.detail) {
			return
		}
	}
	t.Fatalf("want %s error on %q containing %q; got %v", want.typ, want.field, want.detail, errs)
}

func newDefaultingScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func qty(s string) resource.Quantity { return resource.MustParse(s) }

// podBuilder builds test pods; every pod starts valid and defaulted.
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	p := &corev1.Pod{
		// A resourceVersion makes the pod usable as the stored side of an update.
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
	}
	return &podBuilder{pod: p}
}

func (b *podBuilder) container(c corev1.Container) *podBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, c)
	return b
}

func (b *podBuilder) with(mutate func(*corev1.Pod)) *podBuilder {
	mutate(b.pod)
	return b
}

func (b *podBuilder) resources(limits, requests corev1.ResourceList) *podBuilder {
	b.pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: limits, Requests: requests}
	return b
}

func (b *podBuilder) node(name string) *podBuilder {
	b.pod.Spec.NodeName = name
	return b
}

// obj returns the pod after Kubernetes' defaults, as the API server would see it.
func (b *podBuilder) obj() *corev1.Pod {
	p := b.pod.DeepCopy()
	DefaultPod(p)
	return p
}

// raw returns the pod without defaults.
func (b *podBuilder) raw() *corev1.Pod { return b.pod.DeepCopy() }

func makeService(name string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
	DefaultService(svc)
	return svc
}

func ptrTo[T any](v T) *T { return &v }
