package garbagecollector

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

func podsGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: "pods"}
}
func replicasetsGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
}
func deploymentsGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
}

func resources() []ctrlutil.APIResource {
	verbs := sets.New("get", "list", "watch", "delete", "patch")
	return []ctrlutil.APIResource{
		{GVR: podsGVR(), Kind: "Pod", Namespaced: true, Verbs: verbs},
		{GVR: replicasetsGVR(), Kind: "ReplicaSet", Namespaced: true, Verbs: verbs},
		{GVR: deploymentsGVR(), Kind: "Deployment", Namespaced: true, Verbs: verbs},
	}
}

// objSpec describes a test object; owners are "Kind/name" (apps/v1, uid "uid-<name>").
type objSpec struct {
	apiVersion, kind, name string
	owners                 []string
	nonBlocking            bool
	finalizers             []string
	deleting               bool
}

func obj(s objSpec) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(s.apiVersion)
	u.SetKind(s.kind)
	u.SetNamespace("default")
	u.SetName(s.name)
	u.SetUID(types.UID("uid-" + s.name))
	u.SetResourceVersion("7")
	var refs []metav1.OwnerReference
	for _, o := range s.owners {
		kind, name, _ := strings.Cut(o, "/")
		yes, block := true, !s.nonBlocking
		refs = append(refs, metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID("uid-" + name),
			Controller: &yes, BlockOwnerDeletion: &block})
	}
	u.SetOwnerReferences(refs)
	u.SetFinalizers(s.finalizers)
	if s.deleting {
		t := metav1.NewTime(ctrltest.Epoch())
		u.SetDeletionTimestamp(&t)
	}
	return u
}

func pod(name string, owners ...string) *unstructured.Unstructured {
	return obj(objSpec{apiVersion: "v1", kind: "Pod", name: name, owners: owners})
}

func replicaSet(name string, owners ...string) *unstructured.Unstructured {
	return obj(objSpec{apiVersion: "apps/v1", kind: "ReplicaSet", name: name, owners: owners})
}

func gvrOf(u *unstructured.Unstructured) schema.GroupVersionResource {
	switch u.GetKind() {
	case "Pod":
		return podsGVR()
	case "ReplicaSet":
		return replicasetsGVR()
	default:
		return deploymentsGVR()
	}
}

type fixture struct {
	client *dynamicfake.FakeDynamicClient
	gc     *Controller
}

// newFixture puts cached objects in both the API (fake client) and the
// informer caches; live objects only in the API (the cache lags).
func newFixture(t *testing.T, cached []*unstructured.Unstructured, live ...*unstructured.Unstructured) *fixture {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{podsGVR(): "PodList", replicasetsGVR(): "ReplicaSetList", deploymentsGVR(): "DeploymentList"}
	var objs []runtime.Object
	for _, o := range append(slices.Clone(cached), live...) {
		objs = append(objs, o.DeepCopy())
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	env := ctrltest.NewEnv()
	gc := New(env.Deps, client, func(context.Context) ([]ctrlutil.APIResource, error) { return resources(), nil })
	if err := gc.AddResources(resources()); err != nil {
		t.Fatal(err)
	}
	for _, o := range cached {
		ctrltest.Seed(t, gc.Informer(gvrOf(o)), o)
	}
	return &fixture{client: client, gc: gc}
}

func (f *fixture) sync(t *testing.T, o *unstructured.Unstructured) []clienttesting.Action {
	t.Helper()
	if err := f.gc.Sync(context.Background(), itemKey(gvrOf(o), o.GetNamespace(), o.GetName())); err != nil {
		t.Fatal(err)
	}
	var writes []clienttesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			writes = append(writes, a)
		}
	}
	f.client.ClearActions()
	return writes
}

func policyOf(t *testing.T, a clienttesting.Action) metav1.DeletionPropagation {
	t.Helper()
	d, ok := a.(clienttesting.DeleteAction)
	if !ok || d.GetDeleteOptions().PropagationPolicy == nil {
		t.Fatalf("not a delete with a policy: %v", a)
	}
	return *d.GetDeleteOptions().PropagationPolicy
}

func TestBackgroundAndDangling(t *testing.T) {
	rsFoo := replicaSet("foo")
	tests := []struct {
		name       string
		cached     []*unstructured.Unstructured
		live       []*unstructured.Unstructured
		item       *unstructured.Unstructured
		want       []string
		wantPolicy metav1.DeletionPropagation
	}{
		{name: "owner gone: dependant deleted in background", item: pod("p", "ReplicaSet/foo"),
			want: []string{"delete pods p"}, wantPolicy: metav1.DeletePropagationBackground},
		{name: "owner in cache: kept", cached: []*unstructured.Unstructured{rsFoo}, item: pod("p", "ReplicaSet/foo")},
		{name: "owner only live (cache lags): kept", live: []*unstructured.Unstructured{rsFoo}, item: pod("p", "ReplicaSet/foo")},
		{name: "owner recreated under another uid: deleted", live: []*unstructured.Unstructured{withUID(rsFoo, "other")},
			item: pod("p", "ReplicaSet/foo"), want: []string{"delete pods p"}, wantPolicy: metav1.DeletePropagationBackground},
		{name: "one owner left: dangling reference removed", cached: []*unstructured.Unstructured{rsFoo},
			item: pod("p", "ReplicaSet/foo", "ReplicaSet/gone"), want: []string{"patch pods p"}},
		{name: "owner of an unknown kind: left alone", item: obj(objSpec{apiVersion: "v1", kind: "Pod", name: "p", owners: []string{"Widget/w"}})},
		{name: "no owners: left alone", item: pod("p")},
		{name: "dependant with the orphan finalizer is deleted with policy orphan",
			item: obj(objSpec{apiVersion: "v1", kind: "Pod", name: "p", owners: []string{"ReplicaSet/gone"}, finalizers: []string{"orphan"}}),
			want: []string{"delete pods p"}, wantPolicy: metav1.DeletePropagationOrphan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, append(slices.Clone(tt.cached), tt.item), tt.live...)
			actions := f.sync(t, tt.item)
			if got := ctrltest.Describe(actions); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			if tt.wantPolicy != "" {
				if p := policyOf(t, actions[0]); p != tt.wantPolicy {
					t.Fatalf("policy %s, want %s", p, tt.wantPolicy)
				}
				if uid := actions[0].(clienttesting.DeleteAction).GetDeleteOptions().Preconditions.UID; uid == nil || *uid != tt.item.GetUID() {
					t.Fatalf("delete without uid precondition")
				}
			}
			if strings.HasPrefix(tt.name, "one owner left") {
				p := string(actions[0].(clienttesting.PatchAction).GetPatch())
				if strings.Contains(p, "uid-gone") || !strings.Contains(p, "uid-foo") {
					t.Fatalf("patch %s", p)
				}
			}
		})
	}
}

func withUID(u *unstructured.Unstructured, uid string) *unstructured.Unstructured {
	u = u.DeepCopy()
	u.SetUID(types.UID(uid))
	return u
}

func TestForeground(t *testing.T) {
	owner := obj(objSpec{apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", finalizers: []string{metav1.FinalizerDeleteDependents}, deleting: true})
	blocking := pod("blocking", "ReplicaSet/rs")
	loose := obj(objSpec{apiVersion: "v1", kind: "Pod", name: "loose", owners: []string{"ReplicaSet/rs"}, nonBlocking: true})

	f := newFixture(t, []*unstructured.Unstructured{owner, blocking, loose})
	// The owner waits for its blocking dependant.
	if w := f.sync(t, owner); len(w) != 0 {
		t.Fatalf("owner with a blocking dependant: %q", ctrltest.Describe(w))
	}
	if f.gc.loop.Queue.Len() != 2 {
		t.Fatalf("dependants not enqueued: queue length %d", f.gc.loop.Queue.Len())
	}
	// Each dependant of a waiting owner is deleted.
	for _, dep := range []*unstructured.Unstructured{blocking, loose} {
		w := f.sync(t, dep)
		if got := ctrltest.Describe(w); !slices.Equal(got, []string{"delete pods " + dep.GetName()}) {
			t.Fatalf("dependant %s: %q", dep.GetName(), got)
		}
		if p := policyOf(t, w[0]); p != metav1.DeletePropagationBackground {
			t.Fatalf("policy %s", p)
		}
	}
	// Only the non-blocking one left: the finalizer goes.
	f = newFixture(t, []*unstructured.Unstructured{owner, loose})
	w := f.sync(t, owner)
	if got := ctrltest.Describe(w); !slices.Equal(got, []string{"patch replicasets rs"}) {
		t.Fatalf("owner without blocking dependants: %q", got)
	}
	if p := string(w[0].(clienttesting.PatchAction).GetPatch()); strings.Contains(p, metav1.FinalizerDeleteDependents) || !strings.Contains(p, `"resourceVersion":"7"`) {
		t.Fatalf("finalizer patch %s", p)
	}
}

func TestForegroundPropagatesThroughMiddleOwner(t *testing.T) {
	deploy := obj(objSpec{apiVersion: "apps/v1", kind: "Deployment", name: "d", finalizers: []string{metav1.FinalizerDeleteDependents}, deleting: true})
	rs := replicaSet("rs", "Deployment/d")
	p := pod("p", "ReplicaSet/rs")
	f := newFixture(t, []*unstructured.Unstructured{deploy, rs, p})
	w := f.sync(t, rs)
	if got := ctrltest.Describe(w); !slices.Equal(got, []string{"patch replicasets rs", "delete replicasets rs"}) {
		t.Fatalf("actions %q", got)
	}
	if !strings.Contains(string(w[0].(clienttesting.PatchAction).GetPatch()), `"blockOwnerDeletion":false`) {
		t.Fatalf("owner not unblocked: %s", w[0].(clienttesting.PatchAction).GetPatch())
	}
	if pol := policyOf(t, w[1]); pol != metav1.DeletePropagationForeground {
		t.Fatalf("policy %s, want Foreground", pol)
	}
}

func TestOrphan(t *testing.T) {
	owner := obj(objSpec{apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", finalizers: []string{metav1.FinalizerOrphanDependents}, deleting: true})
	p := pod("p", "ReplicaSet/rs")
	f := newFixture(t, []*unstructured.Unstructured{owner, p})
	w := f.sync(t, owner)
	if got := ctrltest.Describe(w); !slices.Equal(got, []string{"patch pods p", "patch replicasets rs"}) {
		t.Fatalf("actions %q", got)
	}
	if patch := string(w[0].(clienttesting.PatchAction).GetPatch()); !strings.Contains(patch, `"ownerReferences":[]`) {
		t.Fatalf("dependant patch %s", patch)
	}
	if patch := string(w[1].(clienttesting.PatchAction).GetPatch()); strings.Contains(patch, "orphan") {
		t.Fatalf("finalizer patch %s", patch)
	}
}

func TestEventsEnqueueDependantsAndOwners(t *testing.T) {
	rs := replicaSet("rs")
	p := pod("p", "ReplicaSet/rs")
	f := newFixture(t, []*unstructured.Unstructured{rs, p})
	f.gc.deleted(replicasetsGVR(), rs)
	// The dependant (and nothing else: the owner has no owners) is enqueued.
	if f.gc.loop.Queue.Len() != 1 {
		t.Fatalf("queue length %d", f.gc.loop.Queue.Len())
	}
	key, _ := f.gc.loop.Queue.Get()
	if key != itemKey(podsGVR(), "default", "p") {
		t.Fatalf("enqueued %q", key)
	}
	f.gc.loop.Queue.Done(key)
	// A deleted dependant wakes its owner (which may wait in foreground).
	f.gc.deleted(podsGVR(), p)
	key, _ = f.gc.loop.Queue.Get()
	if key != itemKey(replicasetsGVR(), "default", "rs") {
		t.Fatalf("enqueued %q", key)
	}
}
