package watchcache_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

// env is the package's shared member (started by the first test that asks); tests isolate
// themselves by key prefix, and tests that compact start their own member.
var env = &testEnv{shared: etcdtest.Shared{Name: "watchcache-test"}}

type testEnv struct{ shared etcdtest.Shared }

func (e *testEnv) member(t testing.TB) *etcd.Member { return e.shared.Member(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	env.shared.Close()
	os.Exit(code)
}

func (e *testEnv) client(t *testing.T) *clientv3.Client { return etcdtest.Client(t, e.member(t)) }

func newPodStore(t testing.TB, client *clientv3.Client) *etcd3.Store {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codec, err := storage.NewCodec(scheme, corev1.SchemeGroupVersion, storage.EncodingProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	return etcd3.New(client, codec, newPod, newPodList)
}

func newPod() runtime.Object     { return &corev1.Pod{} }
func newPodList() runtime.Object { return &corev1.PodList{} }

// newCache wraps store; cfg's NewFunc/NewListFunc are filled in for pods.
func newCache(t testing.TB, store storage.Interface, cfg watchcache.Config) *watchcache.Cache {
	t.Helper()
	cfg.NewFunc, cfg.NewListFunc = newPod, newPodList
	c, err := watchcache.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// countingStore counts the watches opened on the store it wraps.
type countingStore struct {
	storage.Interface
	watches atomic.Int64
}

func (s *countingStore) Watch(ctx context.Context, prefix string, opts storage.ListOptions) (watch.Interface, error) {
	s.watches.Add(1)
	return s.Interface.Watch(ctx, prefix, opts)
}

// rootFor gives every test (and every -count run of it) its own resource root
// "/registry/<test>-<time>/pods/" in the shared etcd.
func rootFor(t *testing.T) string {
	return "/registry/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" +
		strconv.FormatInt(time.Now().UnixNano(), 36) + "/pods/"
}

// podBuilder builds test pods.
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}}
}

func (b *podBuilder) ns(ns string) *podBuilder { b.pod.Namespace = ns; return b }
func (b *podBuilder) label(k, v string) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}
func (b *podBuilder) node(n string) *podBuilder { b.pod.Spec.NodeName = n; return b }
func (b *podBuilder) rv(rv int64) *podBuilder {
	b.pod.ResourceVersion = strconv.FormatInt(rv, 10)
	return b
}
func (b *podBuilder) obj() *corev1.Pod { return b.pod }

func keyOf(root string, pod *corev1.Pod) string { return root + pod.Namespace + "/" + pod.Name }

func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	return labels.Set(pod.Labels), fields.Set{
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
		"spec.nodeName":      pod.Spec.NodeName,
	}, nil
}

func selectLabels(t testing.TB, selector string) storage.Predicate {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	return storage.Predicate{Label: sel, Attrs: podAttrs}
}

func selectFields(t testing.TB, selector string) storage.Predicate {
	t.Helper()
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		t.Fatal(err)
	}
	return storage.Predicate{Field: sel, Attrs: podAttrs}
}

func mustCreate(t testing.TB, s storage.Interface, root string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	out := &corev1.Pod{}
	if err := s.Create(context.Background(), keyOf(root, pod), pod, out); err != nil {
		t.Fatalf("create %s: %v", pod.Name, err)
	}
	return out
}

func mustUpdate(t testing.TB, s storage.Interface, key string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	out := &corev1.Pod{}
	if err := s.GuaranteedUpdate(context.Background(), key, out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		mutate(pod)
		return pod, nil
	}); err != nil {
		t.Fatalf("update %s: %v", key, err)
	}
	return out
}

func mustDelete(t testing.TB, s storage.Interface, key string) *corev1.Pod {
	t.Helper()
	out := &corev1.Pod{}
	if err := s.Delete(context.Background(), key, out, nil, nil); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
	return out
}

func setLabel(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if v == "" {
			delete(p.Labels, k)
			return
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func rvOf(t testing.TB, obj runtime.Object) int64 {
	t.Helper()
	accessor, err := meta.Accessor(obj)
	if err != nil {
		t.Fatalf("no accessor for %T", obj)
	}
	rv, err := strconv.ParseInt(accessor.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", accessor.GetResourceVersion(), err)
	}
	return rv
}

func startWatch(t testing.TB, s storage.Interface, prefix string, opts storage.ListOptions) watch.Interface {
	t.Helper()
	w, err := s.Watch(context.Background(), prefix, opts)
	if err != nil {
		t.Fatalf("watch %s: %v", prefix, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// nextEvent waits for one event or fails the test.
func nextEvent(t testing.TB, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed while waiting for an event")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return watch.Event{}
}

func nextNonBookmark(t testing.TB, w watch.Interface) watch.Event {
	t.Helper()
	for {
		if ev := nextEvent(t, w); ev.Type != watch.Bookmark {
			return ev
		}
	}
}

// seen is an event reduced to what the tests compare.
type seen struct {
	typ   watch.EventType
	name  string
	rv    int64
	label string // the "app" label of the object delivered
}

func (s seen) String() string { return fmt.Sprintf("%s %s@%d app=%q", s.typ, s.name, s.rv, s.label) }

func summarize(t testing.TB, ev watch.Event) seen {
	t.Helper()
	if ev.Type == watch.Error {
		t.Fatalf("error event: %v", ev.Object)
	}
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		t.Fatalf("%s event carries %T, want *Pod", ev.Type, ev.Object)
	}
	return seen{typ: ev.Type, name: pod.Name, rv: rvOf(t, pod), label: pod.Labels["app"]}
}

// collect reads n non-bookmark events.
func collect(t testing.TB, w watch.Interface, n int) []seen {
	t.Helper()
	out := make([]seen, 0, n)
	for range n {
		out = append(out, summarize(t, nextNonBookmark(t, w)))
	}
	return out
}

func expectNoEvent(t testing.TB, w watch.Interface, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			t.Fatalf("unexpected event %s %v", ev.Type, ev.Object)
		case <-deadline:
			return
		}
	}
}

// waitClosed drains w until its channel closes, returning what came before.
func waitClosed(t testing.TB, w watch.Interface) []watch.Event {
	t.Helper()
	var got []watch.Event
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-deadline:
			t.Fatal("watch not closed within 10s")
		}
	}
}

func ptr[T any](v T) *T { return &v }
