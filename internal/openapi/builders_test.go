package openapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/registry"
)

// noopStrategy satisfies registry.Strategy; the documents only look at the resource's shape.
type noopStrategy struct{}

func (noopStrategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (noopStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (noopStrategy) Validate(context.Context, runtime.Object) field.ErrorList         { return nil }
func (noopStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}
func (noopStrategy) AllowCreateOnUpdate() bool      { return false }
func (noopStrategy) AllowUnconditionalUpdate() bool { return true }

type gracefulStrategy struct{ noopStrategy }

func (gracefulStrategy) CheckGracefulDelete(context.Context, runtime.Object, *metav1.DeleteOptions) bool {
	return true
}

type noopStatusStrategy struct{}

func (noopStatusStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (noopStatusStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}

type resourceBuilder struct{ r *registry.Resource }

func makeResource(gv schema.GroupVersion, kind, plural string, newObject, newList func() runtime.Object) *resourceBuilder {
	return &resourceBuilder{r: &registry.Resource{
		GroupVersion: gv, Kind: kind, ListKind: kind + "List", Plural: plural,
		New: newObject, NewList: newList, Strategy: noopStrategy{},
	}}
}

func (b *resourceBuilder) namespaced() *resourceBuilder { b.r.Namespaced = true; return b }
func (b *resourceBuilder) status() *resourceBuilder     { b.r.Status = noopStatusStrategy{}; return b }
func (b *resourceBuilder) graceful() *resourceBuilder   { b.r.Strategy = gracefulStrategy{}; return b }
func (b *resourceBuilder) verbs(v ...string) *resourceBuilder {
	b.r.Verbs = v
	return b
}
func (b *resourceBuilder) scale() *resourceBuilder {
	b.r.Scale = &registry.ScaleAccessor{
		Get:         func(runtime.Object) (*autoscalingv1.Scale, error) { return &autoscalingv1.Scale{}, nil },
		SetReplicas: func(runtime.Object, int32) error { return nil },
	}
	return b
}
func (b *resourceBuilder) obj() *registry.Resource { return b.r }

func podsResource() *registry.Resource {
	return makeResource(corev1.SchemeGroupVersion, "Pod", "pods",
		func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} }).
		namespaced().status().graceful().obj()
}

func namespacesResource() *registry.Resource {
	return makeResource(corev1.SchemeGroupVersion, "Namespace", "namespaces",
		func() runtime.Object { return &corev1.Namespace{} }, func() runtime.Object { return &corev1.NamespaceList{} }).
		status().obj()
}

func deploymentsResource() *registry.Resource {
	return makeResource(appsv1.SchemeGroupVersion, "Deployment", "deployments",
		func() runtime.Object { return &appsv1.Deployment{} }, func() runtime.Object { return &appsv1.DeploymentList{} }).
		namespaced().status().scale().obj()
}

func clusterRolesResource() *registry.Resource {
	return makeResource(rbacv1.SchemeGroupVersion, "ClusterRole", "clusterroles",
		func() runtime.Object { return &rbacv1.ClusterRole{} }, func() runtime.Object { return &rbacv1.ClusterRoleList{} }).
		verbs("get", "list", "watch").obj()
}

func testResources() []*registry.Resource {
	return []*registry.Resource{podsResource(), namespacesResource(), deploymentsResource(), clusterRolesResource()}
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, autoscalingv1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatalf("build scheme: %v", err)
		}
	}
	return scheme
}

var testNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// newTestServer serves a Service over HTTP at the paths the API server mounts it on.
func newTestServer(t *testing.T) (*Service, *httptest.Server) {
	t.Helper()
	svc, err := New(testScheme(t), testResources(), WithClock(clocktesting.NewFakePassiveClock(testNow)), WithVersion("v1.32.0-skiff"))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/openapi/v2", svc.ServeV2)
	v3 := func(w http.ResponseWriter, r *http.Request) { svc.ServeV3(w, r, nil) }
	mux.HandleFunc("/openapi/v3", v3)
	mux.HandleFunc("/openapi/v3/", v3)
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	return svc, server
}

func newCronJob() runtime.Object     { return &batchv1.CronJob{} }
func newCronJobList() runtime.Object { return &batchv1.CronJobList{} }

// undocumented is a type openapi-gen never saw.
type undocumented struct{ metav1.TypeMeta }

func (u *undocumented) DeepCopyObject() runtime.Object { c := *u; return &c }

func newUndocumented() runtime.Object { return &undocumented{} }
