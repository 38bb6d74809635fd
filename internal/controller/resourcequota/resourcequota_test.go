package resourcequota

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

func withResources(p *corev1.Pod, cpuReq, memLimit string) *corev1.Pod {
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq)},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memLimit)},
	}
	return p
}

func TestUsage(t *testing.T) {
	big := withResources(ctrltest.MakePod("big").Obj(), "500m", "1Gi")
	big.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
	small := withResources(ctrltest.MakePod("small").Obj(), "250m", "256Mi")
	done := withResources(ctrltest.MakePod("done").Phase(corev1.PodSucceeded).Obj(), "4", "4Gi")
	plain := ctrltest.MakePod("plain").Obj()
	deadline := ctrltest.MakePod("batch").Obj()
	deadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}}

	tests := []struct {
		name   string
		hard   []string
		scopes []corev1.ResourceQuotaScope
		want   map[string]string
	}{
		{"counts", []string{"pods", "configmaps", "count/deployments.apps", "persistentvolumeclaims", "requests.storage"}, nil,
			map[string]string{"pods": "4", "configmaps": "1", "count/deployments.apps": "1", "persistentvolumeclaims": "1", "requests.storage": "10Gi"}},
		// big holds 2 CPUs (its init container), small 250m; terminated pods hold nothing.
		{"compute", []string{"requests.cpu", "limits.memory", "cpu"}, nil,
			map[string]string{"requests.cpu": "2250m", "limits.memory": "1280Mi", "cpu": "2250m"}},
		{"BestEffort scope", []string{"pods"}, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}, map[string]string{"pods": "2"}},
		{"Terminating scope", []string{"pods"}, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}, map[string]string{"pods": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hard := corev1.ResourceList{}
			for _, h := range tt.hard {
				hard[corev1.ResourceName(h)] = resource.MustParse("100")
			}
			quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"}, Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: tt.scopes}}
			objs := []runtime.Object{quota, big, small, done, plain, deadline, cm, deploy, pvc}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := env.Factory
			ctrltest.Seed(t, f.Core().V1().ResourceQuotas().Informer(), quota)
			ctrltest.Seed(t, f.Core().V1().Pods().Informer(), big, small, done, plain, deadline)
			ctrltest.Seed(t, f.Core().V1().ConfigMaps().Informer(), cm)
			ctrltest.Seed(t, f.Apps().V1().Deployments().Informer(), deploy)
			ctrltest.Seed(t, f.Core().V1().PersistentVolumeClaims().Informer(), pvc)
			if err := c.Sync(context.Background(), "default/q"); err != nil {
				t.Fatal(err)
			}
			w := env.Writes()
			if len(w) != 1 {
				t.Fatalf("writes %q", ctrltest.Describe(w))
			}
			status := w[0].(clienttesting.UpdateAction).GetObject().(*corev1.ResourceQuota).Status
			for name, want := range tt.want {
				got := status.Used[corev1.ResourceName(name)]
				if got.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s used %s, want %s", name, got.String(), want)
				}
			}
			if len(status.Hard) != len(hard) {
				t.Fatalf("hard %v", status.Hard)
			}
		})
	}
}

// TestReleaseOnDelete runs the controller on started informers: an object of each counted kind is
// created (and counted), then deleted, and the quota's usage must drop back to 0 through the
// deletion's event, well before the full resync (the fake clock never reaches it). The conformance
// spec "capture the life of a replication controller" waits for this with an RC.
func TestReleaseOnDelete(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "default"} }
	tests := []struct {
		name   corev1.ResourceName
		create func(ctx context.Context, env *ctrltest.Env) error
		remove func(ctx context.Context, env *ctrltest.Env) error
	}{
		{"replicationcontrollers",
			func(ctx context.Context, env *ctrltest.Env) error {
				_, err := env.Client.CoreV1().ReplicationControllers("default").Create(ctx, &corev1.ReplicationController{ObjectMeta: meta("rc")}, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context, env *ctrltest.Env) error {
				return env.Client.CoreV1().ReplicationControllers("default").Delete(ctx, "rc", metav1.DeleteOptions{})
			}},
		{"count/replicationcontrollers",
			func(ctx context.Context, env *ctrltest.Env) error {
				_, err := env.Client.CoreV1().ReplicationControllers("default").Create(ctx, &corev1.ReplicationController{ObjectMeta: meta("rc")}, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context, env *ctrltest.Env) error {
				return env.Client.CoreV1().ReplicationControllers("default").Delete(ctx, "rc", metav1.DeleteOptions{})
			}},
		{"count/replicasets.apps",
			func(ctx context.Context, env *ctrltest.Env) error {
				_, err := env.Client.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: meta("rs")}, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context, env *ctrltest.Env) error {
				return env.Client.AppsV1().ReplicaSets("default").Delete(ctx, "rs", metav1.DeleteOptions{})
			}},
		{"configmaps",
			func(ctx context.Context, env *ctrltest.Env) error {
				_, err := env.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("cm")}, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context, env *ctrltest.Env) error {
				return env.Client.CoreV1().ConfigMaps("default").Delete(ctx, "cm", metav1.DeleteOptions{})
			}},
	}
	for _, tt := range tests {
		t.Run(string(tt.name), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			q := &corev1.ResourceQuota{ObjectMeta: meta("q"), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{tt.name: resource.MustParse("10")}}}
			env := ctrltest.NewEnv(q)
			c, err := New(env.Deps, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			env.Factory.Start(ctx.Done())
			go c.Run(ctx, 1)
			used := func(want string, recount bool) {
				t.Helper()
				poke := func() {}
				if recount {
					poke = func() { c.enqueueNamespace("default") }
				}
				waitForUsed(ctx, t, env, tt.name, want, poke)
			}
			used("0", false)
			if err := tt.create(ctx, env); err != nil {
				t.Fatal(err)
			}
			// Creation alone starts no recount (admission charges it, and no admission runs here):
			// recount until the informer holds the object.
			used("1", true)
			if err := tt.remove(ctx, env); err != nil {
				t.Fatal(err)
			}
			used("0", false)
			cancel()
			env.Factory.Shutdown()
		})
	}
}

// TestUpdateRecountsWhereQuotasAre runs the controller on started informers: a pod that terminates
// in a namespace with a quota gives its CPU back through the update's event (no recount is asked
// for), and only namespaces that hold a quota are looked at.
func TestUpdateRecountsWhereQuotasAre(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10")}}}
	running := withResources(ctrltest.MakePod("web").Obj(), "500m", "1Gi")
	elsewhere := withResources(ctrltest.MakePod("web").Obj(), "500m", "1Gi")
	elsewhere.Namespace = "other"
	env, c := runController(ctx, t, q, running, elsewhere)
	defer env.Factory.Shutdown()
	defer cancel()
	used := func(want string) {
		t.Helper()
		waitForUsed(ctx, t, env, corev1.ResourceRequestsCPU, want, func() {})
	}
	used("500m")
	if !c.hasQuota("default") || c.hasQuota("other") {
		t.Fatalf("hasQuota: default %v (want true), other %v (want false)", c.hasQuota("default"), c.hasQuota("other"))
	}
	for _, p := range []*corev1.Pod{running, elsewhere} {
		done := p.DeepCopy()
		done.Status.Phase = corev1.PodSucceeded
		if _, err := env.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	used("0")
}

// TestScopeChangeRecounts: a pod that gets an active deadline moves from the NotTerminating
// quota to the Terminating one without its usage changing; the quota it left is recounted (e2e
// "should verify ResourceQuota with terminating scopes through scope selectors"), as upstream's
// update filter asks.
func TestScopeChangeRecounts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}}}
	pod := withResources(ctrltest.MakePod("web").Obj(), "500m", "1Gi")
	env, _ := runController(ctx, t, q, pod)
	defer env.Factory.Shutdown()
	defer cancel()
	waitForUsed(ctx, t, env, corev1.ResourceRequestsCPU, "500m", func() {})
	deadline := pod.DeepCopy()
	deadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](3600)
	if _, err := env.Client.CoreV1().Pods("default").Update(ctx, deadline, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForUsed(ctx, t, env, corev1.ResourceRequestsCPU, "0", func() {})
}

// runController starts the controller and its informers on objs until ctx ends.
func runController(ctx context.Context, t *testing.T, objs ...runtime.Object) (*ctrltest.Env, *Controller) {
	t.Helper()
	env := ctrltest.NewEnv(objs...)
	c, err := New(env.Deps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.Factory.Start(ctx.Done())
	go c.Run(ctx, 1)
	return env, c
}

// waitForUsed polls quota default/q until its status holds want of name, calling poke before each
// look (to ask for a recount), and fails the test with the status it last saw.
func waitForUsed(ctx context.Context, t *testing.T, env *ctrltest.Env, name corev1.ResourceName, want string, poke func()) {
	t.Helper()
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		poke()
		got, err := env.Client.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v, ok := got.Status.Used[name]
		return ok && v.Cmp(resource.MustParse(want)) == 0, nil
	})
	if err != nil {
		got, _ := env.Client.CoreV1().ResourceQuotas("default").Get(context.Background(), "q", metav1.GetOptions{})
		t.Fatalf("%s used never %s: status %v", name, want, got.Status.Used)
	}
}

// TestSyncWritesPastAStaleCache: when the informer still shows the status from before this
// controller's last write (it wrote 1 configmap used; the cache shows the 0 before that), a recount
// of 0 must be written, although it equals what the cache shows; once the cache shows the last write,
// an equal recount writes nothing.
func TestSyncWritesPastAStaleCache(t *testing.T) {
	hard := corev1.ResourceList{"configmaps": resource.MustParse("10")}
	zero := corev1.ResourceList{"configmaps": resource.MustParse("0")}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: zero}}
	env := ctrltest.NewEnv(quota)
	c, err := New(env.Deps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().ResourceQuotas().Informer(), quota)
	c.written.Store("default/q", &corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{"configmaps": resource.MustParse("1")}})
	if err := c.Sync(context.Background(), "default/q"); err != nil {
		t.Fatal(err)
	}
	if w := env.Writes(); len(w) != 1 {
		t.Fatalf("after a write the cache has not seen: writes %q, want the recount written", ctrltest.Describe(w))
	}
	c.written.Store("default/q", quota.Status.DeepCopy())
	if err := c.Sync(context.Background(), "default/q"); err != nil {
		t.Fatal(err)
	}
	if w := env.Writes(); len(w) != 0 {
		t.Fatalf("with the cache current: writes %q, want none", ctrltest.Describe(w))
	}
}

// TestCountsCustomResources: a quota counting count/widgets.example.com (a custom resource no
// counter of New covers) gets its usage from an informer discovery found; a resource discovery
// does not list is not counted; deleting a widget is recounted.
func TestCountsCustomResources(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := func(ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Widget")
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"},
		widget("default", "a"), widget("default", "b"), widget("other", "c"))
	discover := func(context.Context) ([]ctrlutil.APIResource, error) {
		return []ctrlutil.APIResource{{GVR: widgets, Kind: "Widget", Namespaced: true, Verbs: sets.New("list", "watch", "get", "create", "delete")}}, nil
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		"count/widgets.example.com": resource.MustParse("5"), "count/gadgets.example.com": resource.MustParse("5"),
	}}}
	env := ctrltest.NewEnv(q)
	c, err := New(env.Deps, dyn, discover)
	if err != nil {
		t.Fatal(err)
	}
	env.Factory.Start(ctx.Done())
	go c.Run(ctx, 1)
	defer env.Factory.Shutdown()
	defer cancel()
	// The env's clock is fake, so the retry of a sync that found the widgets' cache filling is
	// asked for here.
	poke := func() { c.enqueueNamespace("default") }
	waitForUsed(ctx, t, env, "count/widgets.example.com", "2", poke)
	got, err := env.Client.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Status.Used["count/gadgets.example.com"]; ok {
		t.Errorf("a resource discovery does not list was counted: %v", got.Status.Used)
	}
	if err := dyn.Resource(widgets).Namespace("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForUsed(ctx, t, env, "count/widgets.example.com", "1", func() {})
}
