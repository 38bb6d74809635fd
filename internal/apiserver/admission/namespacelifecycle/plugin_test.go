package namespacelifecycle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

// namespaceLookup serves namespaces by name and counts the reads, so a test can see which writes
// look the namespace up at all.
type namespaceLookup struct {
	namespaces map[string]*corev1.Namespace
	reads      *int
}

func (l namespaceLookup) Get(_ context.Context, group, resource, _, name string) (runtime.Object, error) {
	*l.reads++
	if ns, ok := l.namespaces[name]; ok && group == "" && resource == "namespaces" {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
}

func (namespaceLookup) List(context.Context, string, string, string) (runtime.Object, error) {
	return &corev1.NamespaceList{}, nil
}

func TestNamespaceLifecycle(t *testing.T) {
	ns := func(name string, phase corev1.NamespacePhase) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
	}
	namespaces := map[string]*corev1.Namespace{"live": ns("live", corev1.NamespaceActive), "going": ns("going", corev1.NamespaceTerminating)}
	configMaps := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "configmaps", Namespaced: true}
	events := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "events", Namespaced: true}
	nodes := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "nodes"}
	tests := []struct {
		name     string
		a        admission.Attributes
		wantErr  func(error) bool
		wantRead bool
	}{
		{name: "create in a live namespace", a: admission.Attributes{Verb: "create", Resource: configMaps, Namespace: "live", Name: "c"}, wantRead: true},
		{name: "create in a terminating namespace", a: admission.Attributes{Verb: "create", Resource: configMaps, Namespace: "going", Name: "c"},
			wantErr: terminatingForbidden, wantRead: true},
		{name: "an event in a terminating namespace", a: admission.Attributes{Verb: "create", Resource: events, Namespace: "going", Name: "e"}, wantRead: true},
		{name: "create in a missing namespace", a: admission.Attributes{Verb: "create", Resource: configMaps, Namespace: "gone", Name: "c"},
			wantErr: apierrors.IsNotFound, wantRead: true},
		{name: "update in a terminating namespace", a: admission.Attributes{Verb: "update", Resource: configMaps, Namespace: "going", Name: "c"}},
		{name: "delete in a missing namespace", a: admission.Attributes{Verb: "delete", Resource: configMaps, Namespace: "gone", Name: "c"}},
		{name: "a cluster-scoped object", a: admission.Attributes{Verb: "create", Resource: nodes, Name: "n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			err := Plugin{}.Validate(context.Background(), &tt.a, namespaceLookup{namespaces: namespaces, reads: &reads})
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Validate = %v, want allowed", err)
			case tt.wantErr != nil && !tt.wantErr(err):
				t.Fatalf("Validate = %v, want the other refusal", err)
			}
			if (reads > 0) != tt.wantRead {
				t.Errorf("namespace reads = %d, want a read %v", reads, tt.wantRead)
			}
			if err := (Plugin{}).Admit(context.Background(), &tt.a, nil); err != nil {
				t.Errorf("Admit = %v, the plugin only validates", err)
			}
		})
	}
}

// terminatingForbidden is upstream's refusal: a Forbidden with the NamespaceTerminating cause on
// metadata.namespace, which clients (kubectl, controllers) read to back off.
func terminatingForbidden(err error) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsForbidden(err) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == corev1.NamespaceTerminatingCause && c.Field == "metadata.namespace" {
			return true
		}
	}
	return false
}
