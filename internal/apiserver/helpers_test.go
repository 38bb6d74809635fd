package apiserver

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/storage"
)

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// testEpoch is the fake clock's start, so timestamps in tests are predictable.
var testEpoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// newStorelessServer serves the built-in resources without any storage: enough for the decoding,
// negotiation and patch code paths, which never reach the store.
func newStorelessServer(t testing.TB) *Server {
	t.Helper()
	scheme, err := builtin.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{
		Scheme:        scheme,
		Resources:     builtin.Resources(),
		Storage:       func(*registry.Resource) (storage.Interface, error) { return nil, nil },
		Authenticator: AuthenticatorFunc(func(*http.Request) (*UserInfo, bool, error) { return nil, false, nil }),
		Clock:         clocktesting.NewFakeClock(testEpoch),
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func handlerOf(t testing.TB, s *Server, gvr schema.GroupVersionResource) *resourceHandler {
	t.Helper()
	h := s.handlerFor(gvr)
	if h == nil {
		t.Fatalf("%s is not served", gvr)
	}
	return h
}

// statusOf returns the Kubernetes Status an error carries, failing the test for any other error.
func statusOf(t testing.TB, err error) metav1.Status {
	t.Helper()
	var status apierrors.APIStatus
	if err == nil {
		t.Fatal("expected an error, got none")
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("error %v (%T) is not an API status", err, err)
	}
	status = st
	return status.Status()
}

// podBuilder builds test pods: makePod("web").ns("default").label("app", "web").obj().
type podBuilder struct{ pod corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}}
}

func (b *podBuilder) ns(ns string) *podBuilder { b.pod.Namespace = ns; return b }

func (b *podBuilder) label(k, v string) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

func (b *podBuilder) finalizer(f string) *podBuilder {
	b.pod.Finalizers = append(b.pod.Finalizers, f)
	return b
}

func (b *podBuilder) container(name, image string) *podBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: name, Image: image})
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.pod.DeepCopy() }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
