package discovery

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
)

// noopStrategy satisfies registry.Strategy; discovery only looks at the resource's shape.
type noopStrategy struct{}

func (noopStrategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (noopStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (noopStrategy) Validate(context.Context, runtime.Object) field.ErrorList         { return nil }
func (noopStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}
func (noopStrategy) AllowCreateOnUpdate() bool      { return false }
func (noopStrategy) AllowUnconditionalUpdate() bool { return true }

type noopStatusStrategy struct{}

func (noopStatusStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (noopStatusStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}

type resourceBuilder struct{ r *registry.Resource }

func makeResource(group, version, kind, plural string) *resourceBuilder {
	return &resourceBuilder{r: &registry.Resource{
		GroupVersion: schema.GroupVersion{Group: group, Version: version},
		Kind:         kind, ListKind: kind + "List", Plural: plural, Singular: lower(kind),
		Strategy: noopStrategy{},
	}}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func (b *resourceBuilder) namespaced() *resourceBuilder { b.r.Namespaced = true; return b }
func (b *resourceBuilder) status() *resourceBuilder     { b.r.Status = noopStatusStrategy{}; return b }
func (b *resourceBuilder) shortNames(n ...string) *resourceBuilder {
	b.r.ShortNames = n
	return b
}
func (b *resourceBuilder) categories(c ...string) *resourceBuilder {
	b.r.Categories = c
	return b
}
func (b *resourceBuilder) verbs(v ...string) *resourceBuilder { b.r.Verbs = v; return b }
func (b *resourceBuilder) scale() *resourceBuilder {
	b.r.Scale = &registry.ScaleAccessor{
		Get:         func(runtime.Object) (*autoscalingv1.Scale, error) { return &autoscalingv1.Scale{}, nil },
		SetReplicas: func(runtime.Object, int32) error { return nil },
	}
	return b
}
func (b *resourceBuilder) obj() *registry.Resource { return b.r }

func testResources() []*registry.Resource {
	return []*registry.Resource{
		makeResource("", "v1", "Pod", "pods").namespaced().status().shortNames("po").categories("all").obj(),
		makeResource("", "v1", "Namespace", "namespaces").status().shortNames("ns").verbs("create", "delete", "get", "list", "patch", "update", "watch").obj(),
		makeResource("", "v1", "Node", "nodes").status().shortNames("no").obj(),
		makeResource("apps", "v1", "Deployment", "deployments").namespaced().status().scale().shortNames("deploy").categories("all").obj(),
		makeResource("events.k8s.io", "v1", "Event", "events").namespaced().shortNames("ev").obj(),
		// A group served in two versions: v1 is preferred over v1beta1 whatever the list order.
		makeResource("example.skiff.dev", "v1beta1", "Widget", "widgets").namespaced().obj(),
		makeResource("example.skiff.dev", "v1", "Widget", "widgets").namespaced().obj(),
	}
}

func testExtraSubresources() map[schema.GroupResource][]Subresource {
	return map[schema.GroupResource][]Subresource{
		{Resource: "pods"}: {
			{Name: "binding", Verbs: []string{"create"}, Kind: corev1.SchemeGroupVersion.WithKind("Binding")},
			{Name: "eviction", Verbs: []string{"create"}, Kind: schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}},
			{Name: "log", Verbs: []string{"get"}},
			{Name: "exec", Verbs: []string{"get", "create"}, Kind: schema.GroupVersionKind{Kind: "PodExecOptions"}},
		},
		{Resource: "namespaces"}: {{Name: "finalize", Verbs: []string{"update"}}},
		{Resource: "nodes"}:      {{Name: "proxy", Verbs: []string{"create", "delete", "get", "patch", "update"}, Kind: schema.GroupVersionKind{Kind: "NodeProxyOptions"}}},
	}
}

// recordingServer serves a Discovery and remembers the paths and Accept headers it was asked for.
type recordingServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recordedRequest
}

type recordedRequest struct{ path, accept string }

func (s *recordingServer) seen() []recordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recordedRequest(nil), s.requests...)
}

func newTestServer(t *testing.T, d *Discovery) *recordingServer {
	t.Helper()
	rs := &recordingServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.requests = append(rs.requests, recordedRequest{path: r.URL.Path, accept: r.Header.Get("Accept")})
		rs.mu.Unlock()
		if !Handles(r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		d.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.Close)
	return rs
}
