package local_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/apiserver/local"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/builtin"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

// env is a pod store on a fresh embedded etcd and the watch cache over it.
type env struct {
	res   *registry.Resource
	store *etcd3.Store
	cache *watchcache.Cache
}

func newEnv(t *testing.T) env {
	t.Helper()
	member := etcdtest.StartEmbedded(t, etcdtest.Options{})
	client := etcdtest.Client(t, member)
	scheme, err := builtin.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	var pods *registry.Resource
	for _, res := range builtin.Resources() {
		if res.GroupVersion.Group == "" && res.Plural == "pods" {
			pods = res
		}
	}
	codec, err := builtin.StorageCodec(scheme, pods, "protobuf")
	if err != nil {
		t.Fatal(err)
	}
	st := etcd3.New(client, codec, pods.New, pods.NewList)
	cache, err := watchcache.New(st, watchcache.Config{NewFunc: pods.New, NewListFunc: pods.NewList})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cache.Stop)
	return env{res: pods, store: st, cache: cache}
}

func (e env) createPod(t *testing.T, ns, name, node string, lbls map[string]string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, UID: types.UID("uid-" + ns + name)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	out := &corev1.Pod{}
	if err := e.store.Create(context.Background(), "/registry/core/pods/"+ns+"/"+name, pod, out); err != nil {
		t.Fatalf("create %s/%s: %v", ns, name, err)
	}
	return out
}

func (e env) informers(t *testing.T) *local.Informers {
	t.Helper()
	in := &local.Informers{}
	if err := in.Add(e.res, e.cache); err != nil {
		t.Fatal(err)
	}
	return in
}

// startFactory starts a factory whose pod informer is the in-process one; its client is a fake
// that holds nothing, so anything read through it would be missing.
func startFactory(t *testing.T, in *local.Informers) informers.SharedInformerFactory {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	in.Register(factory)
	factory.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.Start(stop)
	for typ, ok := range factory.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	return factory
}

func waitForPod(t *testing.T, f informers.SharedInformerFactory, ns, name string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		pod, err := f.Core().V1().Pods().Lister().Pods(ns).Get(name)
		if err != nil {
			return false, nil
		}
		got = pod
		return ok(pod), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s never reached the wanted state in the informer (last: %+v)", ns, name, got)
	}
	return got
}

// Two components' factories in one process cache the same pod object: the watch cache's own,
// for the initial state and for later changes.
func TestFactoriesShareTheCachedObjects(t *testing.T) {
	e := newEnv(t)
	e.createPod(t, "ns1", "before", "n1", nil)
	in := e.informers(t)
	controllers, scheduler := startFactory(t, in), startFactory(t, in)

	any := func(*corev1.Pod) bool { return true }
	a := waitForPod(t, controllers, "ns1", "before", any)
	b := waitForPod(t, scheduler, "ns1", "before", any)
	if a != b {
		t.Fatal("two factories hold two copies of the pod listed at start")
	}
	created := e.createPod(t, "ns2", "after", "n2", map[string]string{"app": "web"})
	a = waitForPod(t, controllers, "ns2", "after", any)
	b = waitForPod(t, scheduler, "ns2", "after", any)
	if a != b || a.ResourceVersion != created.ResourceVersion {
		t.Fatalf("pod created later: %p@%s and %p@%s, want one object at %s", a, a.ResourceVersion, b, b.ResourceVersion, created.ResourceVersion)
	}
	if pods, err := controllers.Core().V1().Pods().Lister().Pods("ns2").List(everything()); err != nil || len(pods) != 1 {
		t.Fatalf("namespace index: %d pods in ns2 (%v), want 1", len(pods), err)
	}
}

// List and watch apply selectors and resourceVersion as the API server does, and refuse what it
// refuses with a Status.
func TestListWatchSemantics(t *testing.T) {
	e := newEnv(t)
	for i := range 4 {
		e.createPod(t, "ns", fmt.Sprintf("p%d", i), fmt.Sprintf("node-%d", i%2), map[string]string{"tier": fmt.Sprint(i % 2)})
	}
	lw, err := local.New(e.res, e.cache)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
		want []string
	}{
		{"all", metav1.ListOptions{}, []string{"p0", "p1", "p2", "p3"}},
		{"any state", metav1.ListOptions{ResourceVersion: "0"}, []string{"p0", "p1", "p2", "p3"}},
		{"field", metav1.ListOptions{FieldSelector: "spec.nodeName=node-1"}, []string{"p1", "p3"}},
		{"label", metav1.ListOptions{LabelSelector: "tier=0"}, []string{"p0", "p2"}},
		{"both", metav1.ListOptions{LabelSelector: "tier=0", FieldSelector: "metadata.name!=p0"}, []string{"p2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := lw.ListWithContext(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			list := obj.(*corev1.PodList)
			var names []string
			for _, p := range list.Items {
				names = append(names, p.Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(tc.want) || list.ResourceVersion == "" {
				t.Fatalf("list = %v at %q, want %v with a resourceVersion", names, list.ResourceVersion, tc.want)
			}
		})
	}
	for _, bad := range []metav1.ListOptions{
		{FieldSelector: "spec.unknown=x"},
		{LabelSelector: "a in (("},
		{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
	} {
		if _, err := lw.ListWithContext(ctx, bad); !apierrors.IsBadRequest(err) {
			t.Errorf("list %+v: %v, want a BadRequest Status", bad, err)
		}
	}
	if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: ptr(true)}); !apierrors.IsBadRequest(err) {
		t.Errorf("sendInitialEvents without NotOlderThan: %v, want a BadRequest Status", err)
	}

	// A watch from the list's resourceVersion sees only later changes.
	first, _ := lw.ListWithContext(ctx, metav1.ListOptions{})
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: first.(*corev1.PodList).ResourceVersion, FieldSelector: "spec.nodeName=node-9"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	e.createPod(t, "ns", "elsewhere", "node-1", nil)
	e.createPod(t, "ns", "there", "node-9", nil)
	select {
	case ev := <-w.ResultChan():
		if pod, ok := ev.Object.(*corev1.Pod); !ok || pod.Name != "there" {
			t.Fatalf("watch got %s %v, want ADDED there", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
}

func ptr[T any](v T) *T { return &v }

func everything() labels.Selector { return labels.Everything() }
