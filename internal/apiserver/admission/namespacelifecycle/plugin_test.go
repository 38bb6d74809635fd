package namespacelifecycle

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

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
			err := New(clocktesting.NewFakePassiveClock(time.Now())).Validate(context.Background(), &tt.a, namespaceLookup{namespaces: namespaces, reads: &reads})
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Validate = %v, want allowed", err)
			case tt.wantErr != nil && !tt.wantErr(err):
				t.Fatalf("Validate = %v, want the other refusal", err)
			}
			if (reads > 0) != tt.wantRead {
				t.Errorf("namespace reads = %d, want a read %v", reads, tt.wantRead)
			}
			if err := New(clock.RealClock{}).Admit(context.Background(), &tt.a, nil); err != nil {
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

// cachedLookup answers Get from a cache that has not seen the namespace's deletion yet, and
// GetLatest from storage, which has.
type cachedLookup struct {
	namespaceLookup
	latest      map[string]*corev1.Namespace
	latestReads *int
}

func (l cachedLookup) GetLatest(_ context.Context, group, resource, _, name string) (runtime.Object, error) {
	*l.latestReads++
	if ns, ok := l.latest[name]; ok && group == "" && resource == "namespaces" {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
}

// TestNamespaceLifecycleLooksPastTheCacheAfterADelete: for LiveLookupAfterDelete after this
// server admitted a namespace's deletion, a create in a namespace the lookup's cache still shows
// active reads the namespace again from storage, and is refused there; other namespaces, and the
// same one after the interval, are judged by the lookup alone.
func TestNamespaceLifecycleLooksPastTheCacheAfterADelete(t *testing.T) {
	ns := func(name string, phase corev1.NamespacePhase) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
	}
	reads, latestReads := 0, 0
	lookup := cachedLookup{
		namespaceLookup: namespaceLookup{namespaces: map[string]*corev1.Namespace{"going": ns("going", corev1.NamespaceActive), "other": ns("other", corev1.NamespaceActive)}, reads: &reads},
		latest:          map[string]*corev1.Namespace{"going": ns("going", corev1.NamespaceTerminating), "other": ns("other", corev1.NamespaceActive)},
		latestReads:     &latestReads,
	}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	p := New(clk)
	namespaces := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "namespaces"}
	configMaps := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "configmaps", Namespaced: true}
	create := func(namespace string) error {
		return p.Validate(context.Background(), &admission.Attributes{Verb: "create", Resource: configMaps, Namespace: namespace, Name: "c"}, lookup)
	}

	if err := create("going"); err != nil || latestReads != 0 {
		t.Fatalf("before any delete: %v after %d live reads; want allowed from the lookup alone", err, latestReads)
	}
	if err := p.Validate(context.Background(), &admission.Attributes{Verb: "delete", Resource: namespaces, Name: "going"}, lookup); err != nil {
		t.Fatalf("the namespace's delete: %v", err)
	}
	if err := create("going"); !terminatingForbidden(err) || latestReads != 1 {
		t.Fatalf("just after the delete: %v after %d live reads; want refused from storage's terminating namespace", err, latestReads)
	}
	if err := create("other"); err != nil || latestReads != 1 {
		t.Fatalf("another namespace: %v after %d live reads; want allowed from the lookup alone", err, latestReads)
	}
	clk.SetTime(clk.Now().Add(LiveLookupAfterDelete))
	if err := create("going"); err != nil || latestReads != 1 {
		t.Fatalf("after LiveLookupAfterDelete: %v after %d live reads; want the lookup alone again", err, latestReads)
	}
}
