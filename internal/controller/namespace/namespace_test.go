package namespace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

func podsGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: "pods"}
}
func widgetsGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
}

// Pods support deletecollection; widgets only per-item delete; nodes are
// cluster-scoped and must be left alone.
func resources() []ctrlutil.APIResource {
	return []ctrlutil.APIResource{
		{GVR: podsGVR(), Kind: "Pod", Namespaced: true, Verbs: sets.New("list", "delete", "deletecollection")},
		{GVR: widgetsGVR(), Kind: "Widget", Namespaced: true, Verbs: sets.New("list", "delete")},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node", Verbs: sets.New("list", "delete", "deletecollection")},
	}
}

func item(apiVersion, kind, name string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace("doomed")
	u.SetName(name)
	u.SetFinalizers(finalizers)
	return u
}

func terminating() *corev1.Namespace {
	now := metav1.NewTime(ctrltest.Epoch())
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed", DeletionTimestamp: &now},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
}

type fixture struct {
	env     *ctrltest.Env
	dynamic *dynamicfake.FakeDynamicClient
	ctrl    *Controller
}

func newFixture(t *testing.T, ns *corev1.Namespace, content ...*unstructured.Unstructured) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, o := range content {
		objs = append(objs, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{podsGVR(): "PodList", widgetsGVR(): "WidgetList"}, objs...)
	// The fake tracker has no deletecollection: delete what the list holds,
	// except items with finalizers (they only get a deletionTimestamp).
	dyn.PrependReactor("delete-collection", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		gvr, ns := action.GetResource(), action.GetNamespace()
		list, err := dyn.Tracker().List(gvr, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, ns)
		if err != nil {
			return true, nil, err
		}
		items, _ := list.(*unstructured.UnstructuredList)
		for _, it := range items.Items {
			if len(it.GetFinalizers()) == 0 {
				if err := dyn.Tracker().Delete(gvr, ns, it.GetName()); err != nil {
					return true, nil, err
				}
			}
		}
		return true, nil, nil
	})
	env := ctrltest.NewEnv(ns)
	ctrl, err := New(env.Deps, dyn, func(context.Context) ([]ctrlutil.APIResource, error) { return resources(), nil })
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().Namespaces().Informer(), ns)
	return &fixture{env: env, dynamic: dyn, ctrl: ctrl}
}

func dynamicWrites(f *fixture) []string {
	var out []string
	for _, a := range f.dynamic.Actions() {
		if a.GetVerb() == "delete" || a.GetVerb() == "delete-collection" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func conditionsOf(t *testing.T, actions []clienttesting.Action) map[corev1.NamespaceConditionType]corev1.NamespaceCondition {
	t.Helper()
	for _, a := range actions {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetVerb() == "update" && a.GetSubresource() == "status" {
			out := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
			for _, c := range u.GetObject().(*corev1.Namespace).Status.Conditions {
				out[c.Type] = c
			}
			return out
		}
	}
	t.Fatalf("no status update in %q", ctrltest.Describe(actions))
	return nil
}

func TestEmptiesThenFinalizes(t *testing.T) {
	f := newFixture(t, terminating(), item("v1", "Pod", "p1"), item("v1", "Pod", "p2"), item("example.com/v1", "Widget", "w"))
	if err := f.ctrl.Sync(context.Background(), "doomed"); err != nil {
		t.Fatal(err)
	}
	if got := dynamicWrites(f); !slices.Equal(got, []string{"delete-collection pods", "delete widgets"}) {
		t.Fatalf("content deletes %q", got)
	}
	actions := f.env.Writes()
	if got := ctrltest.Describe(actions); !slices.Equal(got, []string{"update namespaces/status doomed", "create namespaces/finalize doomed"}) {
		// client-go's fake records the finalize PUT as a create of the subresource.
		t.Fatalf("namespace writes %q", got)
	}
	conds := conditionsOf(t, actions)
	want := map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "ResourcesDiscovered",
		corev1.NamespaceDeletionGVParsingFailure: "ParsedGroupVersions",
		corev1.NamespaceDeletionContentFailure:   "ContentDeleted",
		corev1.NamespaceContentRemaining:         "ContentRemoved",
		corev1.NamespaceFinalizersRemaining:      "ContentHasNoFinalizers",
	}
	for typ, reason := range want {
		if c := conds[typ]; c.Status != corev1.ConditionFalse || c.Reason != reason {
			t.Errorf("%s = %s/%s, want False/%s", typ, c.Status, c.Reason, reason)
		}
	}
	finalized := actions[1].(clienttesting.CreateAction).GetObject().(*corev1.Namespace)
	if len(finalized.Spec.Finalizers) != 0 {
		t.Fatalf("finalizers left: %v", finalized.Spec.Finalizers)
	}
}

func TestRemainingContentIsReportedAndRechecked(t *testing.T) {
	f := newFixture(t, terminating(), item("v1", "Pod", "stuck", "example.com/hold"), item("v1", "Pod", "gone"))
	if err := f.ctrl.Sync(context.Background(), "doomed"); err != nil {
		t.Fatal(err)
	}
	actions := f.env.Writes()
	if slices.Contains(ctrltest.Describe(actions), "create namespaces/finalize doomed") {
		t.Fatal("finalized with content remaining")
	}
	conds := conditionsOf(t, actions)
	if c := conds[corev1.NamespaceContentRemaining]; c.Status != corev1.ConditionTrue || c.Reason != "SomeResourcesRemain" ||
		c.Message != "Some resources are remaining: pods. has 1 resource instances" {
		t.Fatalf("content remaining %+v", c)
	}
	if c := conds[corev1.NamespaceFinalizersRemaining]; c.Status != corev1.ConditionTrue ||
		c.Message != "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances" {
		t.Fatalf("finalizers remaining %+v", c)
	}
	// Rechecked after RecheckDelay on the injected clock.
	f.env.Clock.Step(RecheckDelay)
	for range 1000 {
		if f.ctrl.loop.Queue.Len() > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("namespace not rechecked")
}

func TestDeleteFailureIsReported(t *testing.T) {
	f := newFixture(t, terminating(), item("example.com/v1", "Widget", "w"))
	f.dynamic.PrependReactor("delete", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd unavailable")
	})
	if err := f.ctrl.Sync(context.Background(), "doomed"); err == nil {
		t.Fatal("want an error so the namespace is retried")
	}
	c := conditionsOf(t, f.env.Writes())[corev1.NamespaceDeletionContentFailure]
	if c.Status != corev1.ConditionTrue || c.Reason != "ContentDeletionFailed" || !strings.Contains(c.Message, "etcd unavailable") {
		t.Fatalf("content failure %+v", c)
	}
}

func TestIgnoresLiveAndFinalizedNamespaces(t *testing.T) {
	live := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
	done := terminating()
	done.Spec.Finalizers = nil
	for _, ns := range []*corev1.Namespace{live, done} {
		f := newFixture(t, ns, item("v1", "Pod", "p"))
		if err := f.ctrl.Sync(context.Background(), "doomed"); err != nil {
			t.Fatal(err)
		}
		if w := dynamicWrites(f); len(w) != 0 {
			t.Fatalf("deleted content of %+v: %q", ns.ObjectMeta, w)
		}
	}
}
