// Package ctrltest helps controller tests: a fake clientset that honours
// generateName, Deps on a fake clock, and filters for the actions a
// controller took. Test-only; controllers must not import it.
package ctrltest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Epoch is the fake clock's start in every controller test.
func Epoch() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// Env is one controller test's world.
type Env struct {
	Client   *fake.Clientset
	Factory  informers.SharedInformerFactory
	Clock    *clocktesting.FakeClock
	Recorder *record.FakeRecorder
	Deps     ctrlutil.Deps
}

// NewEnv returns a fake clientset holding objs (names generated for
// generateName creates as "<generateName><n>"), an informer factory that is
// never started (tests fill the caches with Seed) and a fake clock at Epoch.
func NewEnv(objs ...runtime.Object) *Env {
	client := fake.NewClientset(objs...)
	var seq atomic.Int64
	client.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(clienttesting.CreateAction)
		if !ok {
			return false, nil, nil
		}
		obj, err := meta.Accessor(create.GetObject())
		if err != nil {
			return false, nil, nil
		}
		if obj.GetName() == "" && obj.GetGenerateName() != "" {
			obj.SetName(fmt.Sprintf("%s%d", obj.GetGenerateName(), seq.Add(1)))
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(Epoch())
	rec := record.NewFakeRecorder(1000)
	factory := informers.NewSharedInformerFactory(client, 0)
	return &Env{
		Client:   client,
		Factory:  factory,
		Clock:    clk,
		Recorder: rec,
		Deps:     ctrlutil.Deps{Client: client, Informers: factory, Clock: clk, Recorder: rec},
	}
}

// Seed adds objs to the informer's cache, as if the watch had delivered them.
func Seed(t *testing.T, informer cache.SharedIndexInformer, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		if err := informer.GetIndexer().Add(o); err != nil {
			t.Fatalf("seed cache: %v", err)
		}
	}
}

// Writes returns the mutating actions the controller took (no get/list/watch),
// and clears the recorded actions.
func (e *Env) Writes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range e.Client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a)
	}
	e.Client.ClearActions()
	return out
}

// Describe renders actions as "verb resource[/subresource] name" lines for
// compact comparisons; creates with generateName show the generateName.
func Describe(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		name := ""
		switch act := a.(type) {
		case clienttesting.CreateAction:
			// UpdateAction has the same method set, so updates land here too; only a create's
			// generated name is random.
			if m, err := meta.Accessor(act.GetObject()); err == nil {
				name = m.GetName()
				if a.GetVerb() == "create" && m.GetGenerateName() != "" {
					name = m.GetGenerateName() + "*"
				}
			}
		case clienttesting.DeleteAction:
			name = act.GetName()
		case clienttesting.PatchAction:
			name = act.GetName()
		}
		out = append(out, fmt.Sprintf("%s %s %s", a.GetVerb(), res, name))
	}
	return out
}

// Events drains the recorded events ("Type Reason message").
func (e *Env) Events() []string {
	var out []string
	for {
		select {
		case ev := <-e.Recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// SyncServiceCreate seeds svc and pods into env's informers, syncs svc's key with sync (a
// Service-keyed controller's Sync) and returns the one object the sync created, failing the test
// unless the sync's writes are exactly want (in Describe's form).
func SyncServiceCreate(t *testing.T, env *Env, sync func(context.Context, string) error, want string, svc *corev1.Service, pods ...*corev1.Pod) runtime.Object {
	t.Helper()
	Seed(t, env.Factory.Core().V1().Services().Informer(), svc)
	for _, p := range pods {
		Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
	}
	if err := sync(context.Background(), svc.Namespace+"/"+svc.Name); err != nil {
		t.Fatal(err)
	}
	actions := env.Writes()
	if got := Describe(actions); len(got) != 1 || got[0] != want {
		t.Fatalf("actions %q, want [%q]", got, want)
	}
	return actions[0].(clienttesting.CreateAction).GetObject()
}

// FinalizerUpdate checks what a protection controller's sync wrote: nothing when finalizers is
// nil, else exactly the one write update ("update persistentvolumes pv-1") leaving the object
// with finalizers, which it returns.
func FinalizerUpdate(t *testing.T, writes []clienttesting.Action, update string, finalizers []string) metav1.Object {
	t.Helper()
	if finalizers == nil {
		if len(writes) != 0 {
			t.Fatalf("writes %q, want none", Describe(writes))
		}
		return nil
	}
	if got := Describe(writes); len(got) != 1 || got[0] != update {
		t.Fatalf("writes %q, want %q", got, update)
	}
	obj, err := meta.Accessor(writes[0].(clienttesting.UpdateAction).GetObject())
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.GetFinalizers(); !slices.Equal(got, finalizers) {
		t.Errorf("finalizers %q, want %q", got, finalizers)
	}
	return obj
}
