package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/core"
	"github.com/skiff-sh/skiff/internal/storage"
)

var testEpoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// recorder notes the hook calls of a test strategy in order.
type recorder struct{ calls []string }

func (r *recorder) add(format string, args ...any) {
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

func (r *recorder) take() string {
	out := strings.Join(r.calls, "; ")
	r.calls = nil
	return out
}

// testStrategy serves ConfigMaps; data["invalid"] fails validation, data["refuse"] fails BeginCreate
// and BeginUpdate.
type testStrategy struct {
	rec            *recorder
	unconditional  bool
	createOnUpdate bool
	// orphanByDefault: a delete without propagation orphans (registry.DependentsOrphaner).
	orphanByDefault bool
}

var (
	_ registry.Strategy     = testStrategy{}
	_ registry.BeginCreater = testStrategy{}
	_ registry.AfterCreater = testStrategy{}
	_ registry.BeginUpdater = testStrategy{}
	_ registry.AfterUpdater = testStrategy{}
	_ registry.AfterDeleter = testStrategy{}
)

func (testStrategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (testStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (testStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	if obj.(*corev1.ConfigMap).Data["invalid"] != "" {
		return field.ErrorList{field.Invalid(field.NewPath("data", "invalid"), "x", "is invalid")}
	}
	return nil
}
func (s testStrategy) ValidateUpdate(ctx context.Context, obj, _ runtime.Object) field.ErrorList {
	return s.Validate(ctx, obj)
}
func (s testStrategy) OrphanDependentsByDefault() bool { return s.orphanByDefault }
func (s testStrategy) AllowCreateOnUpdate() bool       { return s.createOnUpdate }
func (s testStrategy) AllowUnconditionalUpdate() bool  { return s.unconditional }

func (s testStrategy) BeginCreate(_ context.Context, obj runtime.Object, opts *metav1.CreateOptions) (registry.FinishFunc, error) {
	s.rec.add("begin create dryRun=%v", len(opts.DryRun) > 0)
	if obj.(*corev1.ConfigMap).Data["refuse"] != "" {
		return nil, apierrors.NewBadRequest("refused")
	}
	return func(_ context.Context, success bool) { s.rec.add("finish create %v", success) }, nil
}
func (s testStrategy) AfterCreate(context.Context, runtime.Object, *metav1.CreateOptions) {
	s.rec.add("after create")
}
func (s testStrategy) BeginUpdate(_ context.Context, obj, _ runtime.Object, opts *metav1.UpdateOptions) (registry.FinishFunc, error) {
	s.rec.add("begin update dryRun=%v", len(opts.DryRun) > 0)
	if obj.(*corev1.ConfigMap).Data["refuse"] != "" {
		return nil, apierrors.NewBadRequest("refused")
	}
	return func(_ context.Context, success bool) { s.rec.add("finish update %v", success) }, nil
}
func (s testStrategy) AfterUpdate(context.Context, runtime.Object, *metav1.UpdateOptions) {
	s.rec.add("after update")
}
func (s testStrategy) AfterDelete(context.Context, runtime.Object, *metav1.DeleteOptions) {
	s.rec.add("after delete")
}

func newTestStore(t *testing.T, strategy testStrategy) (*Store, *memStorage) {
	t.Helper()
	mem := newMemStorage()
	res := &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion, Kind: "ConfigMap", ListKind: "ConfigMapList", Plural: "configmaps", Namespaced: true,
		New:      func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:  func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy: strategy,
	}
	st, err := New(Config{Resource: res, Storage: mem, Clock: clocktesting.NewFakeClock(testEpoch)})
	if err != nil {
		t.Fatal(err)
	}
	return st, mem
}

func configMap(name string, data ...string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{}}
	for i := 0; i+1 < len(data); i += 2 {
		cm.Data[data[i]] = data[i+1]
	}
	return cm
}

// put returns an UpdatedObjectFunc that asks for obj (a PUT).
func put(obj runtime.Object) UpdatedObjectFunc {
	return func(context.Context, runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil }
}

func mustCreate(t *testing.T, st *Store, obj runtime.Object) *corev1.ConfigMap {
	t.Helper()
	out, err := st.Create(context.Background(), obj, CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return out.(*corev1.ConfigMap)
}

func wantStatus(t *testing.T, err error, code int32, msg string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("error = %v, want a %d status", err, code)
	}
	if st := status.Status(); st.Code != code || !strings.Contains(st.Message, msg) {
		t.Fatalf("error = %d %q, want %d containing %q", st.Code, st.Message, code, msg)
	}
}

func TestUpdatePreconditions(t *testing.T) {
	stale := `Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your changes to the latest version and try again`
	tests := []struct {
		name          string
		unconditional bool
		change        func(next, stored *corev1.ConfigMap)
		wantCode      int32
		wantMsg       string
	}{
		{name: "current resourceVersion", change: func(next, stored *corev1.ConfigMap) {}},
		{name: "stale resourceVersion", change: func(next, _ *corev1.ConfigMap) { next.ResourceVersion = "1" + next.ResourceVersion }, wantCode: 409, wantMsg: stale},
		{name: "unconditional where allowed", unconditional: true, change: func(next, _ *corev1.ConfigMap) { next.ResourceVersion = "" }},
		{name: "unconditional where not allowed", change: func(next, _ *corev1.ConfigMap) { next.ResourceVersion = "" }, wantCode: 422, wantMsg: "metadata.resourceVersion: Invalid value: \"\": must be specified for an update"},
		{name: "resourceVersion 0 is none given", unconditional: true, change: func(next, _ *corev1.ConfigMap) { next.ResourceVersion = "0" }},
		{name: "resourceVersion 0 where unconditional updates are not allowed", change: func(next, _ *corev1.ConfigMap) { next.ResourceVersion = "0" }, wantCode: 422, wantMsg: "metadata.resourceVersion: Invalid value: \"\": must be specified for an update"},
		{name: "other uid", change: func(next, stored *corev1.ConfigMap) { next.UID = "other" }, wantCode: 409,
			wantMsg: `Operation cannot be fulfilled on configmaps "cm": Precondition failed: UID in precondition: other, UID in object meta: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := newTestStore(t, testStrategy{rec: &recorder{}, unconditional: tt.unconditional})
			stored := mustCreate(t, st, configMap("cm"))
			next := stored.DeepCopy()
			next.Data = map[string]string{"k": "v"}
			tt.change(next, stored)
			out, created, err := st.Update(context.Background(), "default", "cm", put(next), UpdateOptions{})
			if tt.wantCode != 0 {
				wantStatus(t, err, tt.wantCode, tt.wantMsg)
				return
			}
			if err != nil || created || out.(*corev1.ConfigMap).Data["k"] != "v" {
				t.Fatalf("update = %v, created %v, %+v", err, created, out)
			}
		})
	}
}

func TestDeletePreconditions(t *testing.T) {
	st, _ := newTestStore(t, testStrategy{rec: &recorder{}})
	stored := mustCreate(t, st, configMap("cm"))
	other, old := types.UID("other"), "999"
	_, _, err := st.Delete(context.Background(), "default", "cm", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}}, nil)
	wantStatus(t, err, 409, fmt.Sprintf(`Operation cannot be fulfilled on configmaps "cm": Precondition failed: UID in precondition: other, UID in object meta: %s`, stored.UID))
	_, _, err = st.Delete(context.Background(), "default", "cm", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &old}}, nil)
	wantStatus(t, err, 409, fmt.Sprintf("Precondition failed: ResourceVersion in precondition: 999, ResourceVersion in object meta: %s", stored.ResourceVersion))
	if _, deleted, err := st.Delete(context.Background(), "default", "cm", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &stored.UID}}, nil); err != nil || !deleted {
		t.Fatalf("delete with matching uid = %v, deleted %v", err, deleted)
	}
}

// TestDeleteDefaultPropagation: a delete that names no propagation orphans the dependents of a type
// whose default is to orphan (the orphan finalizer keeps the object for the garbage collector)
// unless the object already asks for foreground deletion, and deletes at once otherwise or when
// the request says background.
func TestDeleteDefaultPropagation(t *testing.T) {
	background := metav1.DeletePropagationBackground
	for _, tt := range []struct {
		name            string
		orphanByDefault bool
		finalizers      []string
		opts            metav1.DeleteOptions
		wantFinalizers  []string // nil: deleted at once
	}{
		{"orphaning type, no propagation", true, nil, metav1.DeleteOptions{}, []string{metav1.FinalizerOrphanDependents}},
		{"orphaning type, background asked", true, nil, metav1.DeleteOptions{PropagationPolicy: &background}, nil},
		{"orphaning type, object chose foreground", true, []string{metav1.FinalizerDeleteDependents}, metav1.DeleteOptions{}, []string{metav1.FinalizerDeleteDependents}},
		{"other types, no propagation", false, nil, metav1.DeleteOptions{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := newTestStore(t, testStrategy{rec: &recorder{}, orphanByDefault: tt.orphanByDefault})
			cm := configMap("cm")
			cm.Finalizers = tt.finalizers
			mustCreate(t, st, cm)
			out, deleted, err := st.Delete(context.Background(), "default", "cm", &tt.opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if deleted != (tt.wantFinalizers == nil) {
				t.Fatalf("deleted %v, want %v", deleted, tt.wantFinalizers == nil)
			}
			if got := out.(*corev1.ConfigMap); !deleted && (!slices.Equal(got.Finalizers, tt.wantFinalizers) || got.DeletionTimestamp == nil) {
				t.Errorf("kept with finalizers %v, deletionTimestamp %v; want %v", got.Finalizers, got.DeletionTimestamp, tt.wantFinalizers)
			}
		})
	}
}

func TestCreateOnUpdate(t *testing.T) {
	tests := []struct {
		name           string
		createOnUpdate bool
		opts           UpdateOptions
		wantCreated    bool
		wantCode       int32
	}{
		{name: "strategy allows", createOnUpdate: true, wantCreated: true},
		{name: "strategy does not allow", wantCode: 404},
		{name: "forced (server-side apply)", opts: UpdateOptions{ForceAllowCreate: true}, wantCreated: true},
		{name: "never through a subresource", createOnUpdate: true, opts: UpdateOptions{Subresource: "status"}, wantCode: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			st, mem := newTestStore(t, testStrategy{rec: rec, createOnUpdate: tt.createOnUpdate})
			out, created, err := st.Update(context.Background(), "default", "cm", put(configMap("cm")), tt.opts)
			if tt.wantCode != 0 {
				wantStatus(t, err, tt.wantCode, "not found")
				if mem.writes != 0 {
					t.Fatalf("%d writes after a refused create-on-update", mem.writes)
				}
				return
			}
			m := out.(*corev1.ConfigMap)
			if err != nil || created != tt.wantCreated || m.UID == "" || m.ResourceVersion == "" || !m.CreationTimestamp.Time.Equal(testEpoch) {
				t.Fatalf("update = %v, created %v, %+v", err, created, m.ObjectMeta)
			}
			if got, want := rec.take(), "begin create dryRun=false; finish create true; after create"; got != want {
				t.Errorf("hooks = %q, want %q", got, want)
			}
		})
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	st, mem := newTestStore(t, testStrategy{rec: rec, createOnUpdate: true})
	stored := mustCreate(t, st, configMap("cm", "finalize-me", "x"))
	rec.take()
	writes := mem.writes

	out, err := st.Create(ctx, configMap("new"), CreateOptions{DryRun: true})
	if err != nil || out.(*corev1.ConfigMap).UID == "" {
		t.Fatalf("dry-run create = %v %+v", err, out)
	}
	_, err = st.Create(ctx, configMap("cm"), CreateOptions{DryRun: true})
	wantStatus(t, err, 409, "already exists")
	next := stored.DeepCopy()
	next.Data["k"] = "v"
	if out, _, err := st.Update(ctx, "default", "cm", put(next), UpdateOptions{DryRun: true}); err != nil || out.(*corev1.ConfigMap).Data["k"] != "v" {
		t.Fatalf("dry-run update = %v %+v", err, out)
	}
	if _, created, err := st.Update(ctx, "default", "other", put(configMap("other")), UpdateOptions{DryRun: true}); err != nil || !created {
		t.Fatalf("dry-run create-on-update = %v, created %v", err, created)
	}
	if _, deleted, err := st.Delete(ctx, "default", "cm", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, nil); err != nil || !deleted {
		t.Fatalf("dry-run delete = %v, deleted %v", err, deleted)
	}
	if mem.writes != writes {
		t.Fatalf("dry runs wrote %d times", mem.writes-writes)
	}
	if _, err := st.Get(ctx, "default", "new", storage.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry-run created object is readable: %v", err)
	}
	want := "begin create dryRun=true; finish create true; " +
		"begin update dryRun=true; finish update true; begin create dryRun=true; finish create true"
	if got := rec.take(); got != want {
		t.Errorf("hooks = %q\nwant    %q", got, want)
	}
}

func TestHooks(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, st *Store, mem *memStorage) error
		want string
	}{
		{
			name: "create",
			run: func(_ *testing.T, st *Store, _ *memStorage) error {
				_, err := st.Create(ctx, configMap("new"), CreateOptions{})
				return err
			},
			want: "begin create dryRun=false; finish create true; after create",
		},
		{
			name: "create whose write fails",
			run: func(_ *testing.T, st *Store, _ *memStorage) error {
				_, err := st.Create(ctx, configMap("cm"), CreateOptions{})
				return err
			},
			want: "begin create dryRun=false; finish create false",
		},
		{
			name: "create refused by its hook",
			run: func(_ *testing.T, st *Store, _ *memStorage) error {
				_, err := st.Create(ctx, configMap("new", "refuse", "x"), CreateOptions{})
				return err
			},
			want: "begin create dryRun=false",
		},
		{
			name: "create that fails validation never reaches the hook",
			run: func(_ *testing.T, st *Store, _ *memStorage) error {
				_, err := st.Create(ctx, configMap("new", "invalid", "x"), CreateOptions{})
				return err
			},
		},
		{
			name: "update",
			run: func(_ *testing.T, st *Store, _ *memStorage) error {
				_, _, err := st.Update(ctx, "default", "cm", put(configMap("cm", "k", "v")), UpdateOptions{})
				return err
			},
			want: "begin update dryRun=false; finish update true; after update",
		},
		{
			name: "update retried after a lost compare-and-swap",
			run: func(_ *testing.T, st *Store, mem *memStorage) error {
				mem.raceUpdates = 1
				_, _, err := st.Update(ctx, "default", "cm", put(configMap("cm", "k", "v")), UpdateOptions{})
				return err
			},
			want: "begin update dryRun=false; finish update false; begin update dryRun=false; finish update true; after update",
		},
		{
			name: "update that fails validation after its hook",
			run: func(_ *testing.T, st *Store, _ *memStorage) error {
				_, _, err := st.Update(ctx, "default", "cm", put(configMap("cm", "invalid", "x")), UpdateOptions{})
				return err
			},
			want: "begin update dryRun=false; finish update false",
		},
		{
			name: "update whose write fails",
			run: func(_ *testing.T, st *Store, mem *memStorage) error {
				mem.failWrites = storage.NewError(storage.ErrCodeUnreachable, "k", "", nil)
				_, _, err := st.Update(ctx, "default", "cm", put(configMap("cm", "k", "v")), UpdateOptions{})
				return err
			},
			want: "begin update dryRun=false; finish update false",
		},
		{
			name: "delete",
			run: func(_ *testing.T, st *Store, _ *memStorage) error {
				_, _, err := st.Delete(ctx, "default", "cm", nil, nil)
				return err
			},
			want: "after delete",
		},
		{
			name: "delete held by a finalizer, then the update that removes it",
			run: func(t *testing.T, st *Store, _ *memStorage) error {
				withFinalizer := configMap("cm")
				withFinalizer.Finalizers = []string{"example.com/hold"}
				if _, _, err := st.Update(ctx, "default", "cm", put(withFinalizer), UpdateOptions{}); err != nil {
					return err
				}
				out, deleted, err := st.Delete(ctx, "default", "cm", nil, nil)
				if err != nil || deleted || out.(*corev1.ConfigMap).DeletionTimestamp == nil {
					t.Fatalf("delete with a finalizer = %v, deleted %v", err, deleted)
				}
				_, _, err = st.Update(ctx, "default", "cm", put(configMap("cm")), UpdateOptions{})
				if _, getErr := st.Get(ctx, "default", "cm", storage.GetOptions{}); !apierrors.IsNotFound(getErr) {
					t.Fatalf("object whose last finalizer went is still there: %v", getErr)
				}
				return err
			},
			want: "begin update dryRun=false; finish update true; after update; " +
				"begin update dryRun=false; finish update true; after update; after delete",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			st, mem := newTestStore(t, testStrategy{rec: rec, unconditional: true})
			mustCreate(t, st, configMap("cm"))
			rec.take()
			_ = tt.run(t, st, mem)
			if got := rec.take(); got != tt.want {
				t.Errorf("hooks = %q\nwant    %q", got, tt.want)
			}
		})
	}
}

// fakeAllocator records what the services strategy's hooks ask of it.
type fakeAllocator struct{ rec *recorder }

func (a fakeAllocator) AllocateCreate(_ context.Context, svc *corev1.Service, dryRun bool) (func(context.Context), error) {
	a.rec.add("allocate %s dryRun=%v", svc.Name, dryRun)
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.43.0.10", []string{"10.43.0.10"}
	return func(context.Context) { a.rec.add("release 10.43.0.10") }, nil
}

func (a fakeAllocator) AllocateUpdate(_ context.Context, svc, _ *corev1.Service, dryRun bool) (func(context.Context), error) {
	a.rec.add("allocate update %s dryRun=%v", svc.Name, dryRun)
	return func(context.Context) { a.rec.add("release update") }, nil
}

func (a fakeAllocator) Release(_ context.Context, svc *corev1.Service) {
	a.rec.add("release %s", svc.Spec.ClusterIP)
}

func (fakeAllocator) ReleaseDropped(context.Context, *corev1.Service, *corev1.Service) {}

func coreResource(t *testing.T, plural string) *registry.Resource {
	t.Helper()
	for _, res := range core.Resources() {
		if res.Plural == plural {
			return res
		}
	}
	t.Fatalf("core has no %s", plural)
	return nil
}

func TestServiceAllocationRollsBackWhenTheWriteFails(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	res := core.WithServiceAllocator(coreResource(t, "services"), fakeAllocator{rec: rec})
	mem := newMemStorage()
	st, err := New(Config{Resource: res, Storage: mem, Clock: clocktesting.NewFakeClock(testEpoch)})
	if err != nil {
		t.Fatal(err)
	}
	svc := func() *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
				SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: ptrTo(corev1.ServiceInternalTrafficPolicyCluster)},
		}
	}

	mem.failWrites = storage.NewError(storage.ErrCodeUnreachable, "k", "", nil)
	if _, err := st.Create(ctx, svc(), CreateOptions{}); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("create on failing storage = %v, want service unavailable", err)
	}
	if got, want := rec.take(), "allocate web dryRun=false; release 10.43.0.10"; got != want {
		t.Fatalf("failed create: %q, want %q", got, want)
	}

	mem.failWrites = nil
	if _, err := st.Create(ctx, svc(), CreateOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.take(), "allocate web dryRun=true"; got != want {
		t.Fatalf("dry-run create: %q, want %q", got, want)
	}
	out, err := st.Create(ctx, svc(), CreateOptions{})
	if err != nil || out.(*corev1.Service).Spec.ClusterIP != "10.43.0.10" {
		t.Fatalf("create = %v %+v", err, out)
	}
	if _, err := st.Create(ctx, svc(), CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create = %v, want AlreadyExists", err)
	}
	if _, _, err := st.Delete(ctx, "default", "web", nil, nil); err != nil {
		t.Fatal(err)
	}
	want := "allocate web dryRun=false; allocate web dryRun=false; release 10.43.0.10; release 10.43.0.10"
	if got := rec.take(); got != want {
		t.Fatalf("create, taken name, delete: %q\nwant %q", got, want)
	}
}

func TestNamespaceFinalization(t *testing.T) {
	ctx := context.Background()
	st, err := New(Config{Resource: coreResource(t, "namespaces"), Storage: newMemStorage(), Clock: clocktesting.NewFakeClock(testEpoch)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Delete(ctx, "", "kube-system", nil, nil); !apierrors.IsForbidden(err) {
		t.Fatalf("delete kube-system = %v, want Forbidden", err)
	}
	if _, err := st.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, deleted, err := st.Delete(ctx, "", "doomed", nil, nil)
	ns, _ := out.(*corev1.Namespace)
	if err != nil || deleted || ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("delete = %v, deleted %v, %+v", err, deleted, out)
	}
	// A main-resource update keeps spec.finalizers, so the namespace stays.
	if _, _, err := st.Update(ctx, "", "doomed", put(ns), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "", "doomed", storage.GetOptions{}); err != nil {
		t.Fatalf("namespace with spec.finalizers went away on update: %v", err)
	}
	finalized := ns.DeepCopy()
	finalized.ResourceVersion = ""
	finalized.Spec.Finalizers = nil
	if _, _, err := st.Update(ctx, "", "doomed", put(finalized), UpdateOptions{Subresource: "finalize"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "", "doomed", storage.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("finalized namespace = %v, want NotFound", err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestCreateWithResourceVersion: a create carrying a resourceVersion is refused (400), but only
// after admission, as Kubernetes' storage layer refuses it: a validating policy that denies the
// request is what the client hears (e2e's per-node ValidatingAdmissionPolicy spec re-creates a
// stored object and expects the policy's message).
func TestCreateWithResourceVersion(t *testing.T) {
	st, _ := newTestStore(t, testStrategy{})
	cm := configMap("stale")
	cm.ResourceVersion = "42"
	denied := errors.New("denied by policy")
	_, err := st.Create(context.Background(), cm.DeepCopy(), CreateOptions{Admission: Admission{
		Validate: func(context.Context, runtime.Object, runtime.Object) error { return denied },
	}})
	if !errors.Is(err, denied) {
		t.Fatalf("create with a resourceVersion that admission denies = %v, want the denial", err)
	}
	_, err = st.Create(context.Background(), cm.DeepCopy(), CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "resourceVersion should not be set on objects to be created") {
		t.Fatalf("create with a resourceVersion = %v, want 400 resourceVersion should not be set", err)
	}
}
