package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/registry"
)

// The action subresources (pods/binding, pods/eviction, serviceaccounts/token) are tested on a
// fixture of the generic store: objects in memory, the store's precondition checks, and a record
// of every call an action made, so a test asserts both the answer and the writes behind it.

var actionEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// storeCall is one call an action made on a fixture store.
type storeCall struct {
	verb     string // get, list, update, delete
	resource string
	name     string
	dryRun   bool
	options  *metav1.DeleteOptions
}

// fixtureStores serves fixture stores by resource and records the calls made on all of them.
type fixtureStores struct {
	stores map[schema.GroupResource]*fixtureStore
	calls  []storeCall
}

func newFixtureStores(objs ...runtime.Object) *fixtureStores {
	f := &fixtureStores{stores: map[schema.GroupResource]*fixtureStore{}}
	for _, gr := range []schema.GroupResource{podsResource, pdbResource, {Resource: "serviceaccounts"}, {Resource: "secrets"}, {Resource: "nodes"}} {
		f.stores[gr] = &fixtureStore{all: f, gr: gr, objects: map[string]runtime.Object{}}
	}
	for _, obj := range objs {
		m, err := apimeta.Accessor(obj)
		if err != nil {
			panic(err)
		}
		if m.GetResourceVersion() == "" {
			m.SetResourceVersion("1")
		}
		f.stores[grOf(obj)].objects[m.GetNamespace()+"/"+m.GetName()] = obj.DeepCopyObject()
	}
	return f
}

func grOf(obj runtime.Object) schema.GroupResource {
	switch obj.(type) {
	case *corev1.Pod:
		return podsResource
	case *policyv1.PodDisruptionBudget:
		return pdbResource
	case *corev1.ServiceAccount:
		return schema.GroupResource{Resource: "serviceaccounts"}
	case *corev1.Secret:
		return schema.GroupResource{Resource: "secrets"}
	case *corev1.Node:
		return schema.GroupResource{Resource: "nodes"}
	}
	panic(fmt.Sprintf("no fixture store for %T", obj))
}

func (f *fixtureStores) Store(gr schema.GroupResource) (registry.ObjectStore, bool) {
	st, ok := f.stores[gr]
	return st, ok
}

// object is the stored object of gr namespace/name, nil when there is none.
func (f *fixtureStores) object(gr schema.GroupResource, namespace, name string) runtime.Object {
	return f.stores[gr].objects[namespace+"/"+name]
}

// writes are the recorded calls that change something (updates and deletes), as
// "verb resource name", "(dry run)" marking dry runs.
func (f *fixtureStores) writes() []string {
	var out []string
	for _, c := range f.calls {
		if c.verb != "update" && c.verb != "delete" {
			continue
		}
		s := c.verb + " " + c.resource + " " + c.name
		if c.dryRun {
			s += " (dry run)"
		}
		out = append(out, s)
	}
	return out
}

// fixtureStore is one resource's store. conflicts makes that many next updates lose to another
// writer, as a compare-and-swap that keeps failing would.
type fixtureStore struct {
	all       *fixtureStores
	gr        schema.GroupResource
	objects   map[string]runtime.Object
	conflicts int
	rv        int
}

func (s *fixtureStore) record(c storeCall) {
	c.resource = s.gr.Resource
	s.all.calls = append(s.all.calls, c)
}

func (s *fixtureStore) Get(_ context.Context, namespace, name string, _ bool) (runtime.Object, error) {
	s.record(storeCall{verb: "get", name: name})
	obj, ok := s.objects[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(s.gr, name)
	}
	return obj.DeepCopyObject(), nil
}

func (s *fixtureStore) List(_ context.Context, namespace string) (runtime.Object, error) {
	s.record(storeCall{verb: "list"})
	if s.gr != pdbResource {
		return nil, fmt.Errorf("the fixture lists only budgets, not %s", s.gr)
	}
	list := &policyv1.PodDisruptionBudgetList{}
	for _, obj := range s.objects {
		if pdb := obj.(*policyv1.PodDisruptionBudget); pdb.Namespace == namespace {
			list.Items = append(list.Items, *pdb.DeepCopy())
		}
	}
	slices.SortFunc(list.Items, func(a, b policyv1.PodDisruptionBudget) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
}

func (s *fixtureStore) GuaranteedUpdate(_ context.Context, namespace, name string, preconditions *metav1.Preconditions, dryRun bool,
	tryUpdate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	s.record(storeCall{verb: "update", name: name, dryRun: dryRun})
	key := namespace + "/" + name
	stored, ok := s.objects[key]
	if !ok {
		return nil, apierrors.NewNotFound(s.gr, name)
	}
	m, _ := apimeta.Accessor(stored)
	if s.conflicts > 0 {
		s.conflicts--
		// Another writer got there first: the object moved on, as the real store sees it.
		s.rv++
		m.SetResourceVersion("changed-" + strconv.Itoa(s.rv))
		return nil, apierrors.NewConflict(s.gr, name, errors.New("the object has been modified"))
	}
	if p := preconditions; p != nil {
		if p.UID != nil && *p.UID != m.GetUID() {
			return nil, apierrors.NewConflict(s.gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
			return nil, apierrors.NewConflict(s.gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
		}
	}
	out, err := tryUpdate(stored.DeepCopyObject())
	if err != nil {
		return nil, err
	}
	if dryRun {
		return out, nil
	}
	s.rv++
	om, _ := apimeta.Accessor(out)
	om.SetResourceVersion("w" + strconv.Itoa(s.rv))
	s.objects[key] = out.DeepCopyObject()
	return out, nil
}

func (s *fixtureStore) Modify(ctx context.Context, namespace, name string, preconditions *metav1.Preconditions, dryRun bool,
	tryUpdate func(current runtime.Object) (runtime.Object, error)) error {
	_, err := s.GuaranteedUpdate(ctx, namespace, name, preconditions, dryRun, tryUpdate)
	return err
}

func (s *fixtureStore) Delete(_ context.Context, namespace, name string, options *metav1.DeleteOptions) error {
	s.record(storeCall{verb: "delete", name: name, dryRun: len(options.DryRun) > 0, options: options.DeepCopy()})
	key := namespace + "/" + name
	stored, ok := s.objects[key]
	if !ok {
		return apierrors.NewNotFound(s.gr, name)
	}
	m, _ := apimeta.Accessor(stored)
	if p := options.Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(s.gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	switch {
	case len(options.DryRun) > 0:
	case options.GracePeriodSeconds != nil && *options.GracePeriodSeconds > 0:
		// A graceful delete only marks the object, as the store does for pods.
		ts := metav1.NewTime(actionEpoch)
		m.SetDeletionTimestamp(&ts)
	default:
		delete(s.objects, key)
	}
	return nil
}

// admissionRecorder is an ActionRequest.Admit that records what it saw and may refuse.
type admissionRecorder struct {
	seen   []runtime.Object
	dryRun []bool
	refuse error
}

func (a *admissionRecorder) admit(_ context.Context, body runtime.Object, dryRun bool) error {
	a.seen = append(a.seen, body.DeepCopyObject())
	a.dryRun = append(a.dryRun, dryRun)
	return a.refuse
}

// runAction runs the named action of resource plural on stores, as the API server routes a POST.
func runAction(t *testing.T, plural, subresource string, env registry.ActionEnv, req registry.ActionRequest) (runtime.Object, error) {
	t.Helper()
	action := resourceByPlural(t, plural).Actions[subresource]
	if action == nil {
		t.Fatalf("%s/%s is not an action", plural, subresource)
	}
	if got := action.New(); fmt.Sprintf("%T", got) != fmt.Sprintf("%T", req.Body) {
		t.Fatalf("%s/%s takes %T, the test sends %T", plural, subresource, got, req.Body)
	}
	return action.Create(context.Background(), env, req)
}

// wantStatus checks an action's error: its HTTP code, a fragment of its message, and the
// field causes it must carry ("field:type").
func wantStatus(t *testing.T, err error, code int32, message string, causes ...string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("want a %d Status error containing %q, got %v", code, message, err)
	}
	s := status.Status()
	if s.Code != code || !strings.Contains(s.Message, message) {
		t.Fatalf("want %d containing %q, got %d %q", code, message, s.Code, s.Message)
	}
	for _, want := range causes {
		found := false
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				found = found || c.Field+":"+string(c.Type) == want
			}
		}
		if !found {
			t.Fatalf("want cause %s in %+v", want, s.Details)
		}
	}
}

// wantCreated checks an action's success: a Success Status with 201.
func wantCreated(t *testing.T, out runtime.Object, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("want success, got %v", err)
	}
	if s, ok := out.(*metav1.Status); !ok || s.Status != metav1.StatusSuccess || s.Code != 201 {
		t.Fatalf("want a Success Status with 201, got %#v", out)
	}
}

func fixtureEnv(stores *fixtureStores) registry.ActionEnv {
	return registry.ActionEnv{Stores: stores, Clock: clocktesting.NewFakePassiveClock(actionEpoch)}
}
