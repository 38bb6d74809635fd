package etcd3_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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
)

// env is the package's shared member (started by the first test that asks); tests isolate
// themselves by key prefix, and tests that compact start their own member.
var env = &testEnv{shared: etcdtest.Shared{Name: "etcd3-test"}}

type testEnv struct{ shared etcdtest.Shared }

func (e *testEnv) member(t testing.TB) *etcd.Member { return e.shared.Member(t) }

func (e *testEnv) client(t testing.TB) *clientv3.Client { return etcdtest.Client(t, e.member(t)) }

func TestMain(m *testing.M) {
	code := m.Run()
	env.shared.Close()
	os.Exit(code)
}

func newScheme(t testing.TB) *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatalf("scheme: %v", err)
	}
	return scheme
}

func newPodStore(t testing.TB, client *clientv3.Client, encoding string) *etcd3.Store {
	t.Helper()
	codec, err := storage.NewCodec(newScheme(t), corev1.SchemeGroupVersion, encoding)
	if err != nil {
		t.Fatalf("codec: %v", err)
	}
	return etcd3.New(client, codec,
		func() runtime.Object { return &corev1.Pod{} },
		func() runtime.Object { return &corev1.PodList{} })
}

// prefixFor gives every test (and every -count run of it) its own key space in the shared etcd.
func prefixFor(t *testing.T) string {
	return "/registry/" + strings.ReplaceAll(t.Name(), "/", "_") + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/pods/"
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// podBuilder builds test pods.
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}}
}

func (b *podBuilder) label(k, v string) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

func (b *podBuilder) node(n string) *podBuilder { b.pod.Spec.NodeName = n; return b }
func (b *podBuilder) obj() *corev1.Pod          { return b.pod }

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

func selectLabels(t *testing.T, selector string) storage.Predicate {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatalf("selector %q: %v", selector, err)
	}
	return storage.Predicate{Label: sel, Attrs: podAttrs}
}

func mustCreate(t *testing.T, s storage.Interface, key string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	out := &corev1.Pod{}
	if err := s.Create(ctxFor(t), key, pod, out); err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return out
}

func rvOf(t *testing.T, obj runtime.Object) int64 {
	t.Helper()
	var raw string
	if accessor, err := meta.Accessor(obj); err == nil {
		raw = accessor.GetResourceVersion()
	} else if listAccessor, lerr := meta.ListAccessor(obj); lerr == nil {
		raw = listAccessor.GetResourceVersion()
	} else {
		t.Fatalf("no resourceVersion on %T", obj)
	}
	rv, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", raw, err)
	}
	return rv
}

func names(items []corev1.Pod) []string {
	out := make([]string, 0, len(items))
	for _, p := range items {
		out = append(out, p.Name)
	}
	return out
}

// nextEvent waits for one event or fails the test.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
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

// nextNonBookmark skips bookmarks.
func nextNonBookmark(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	for {
		ev := nextEvent(t, w)
		if ev.Type != watch.Bookmark {
			return ev
		}
	}
}

type wantEvent struct {
	typ  watch.EventType
	name string
	rv   int64 // 0: do not check
}

func expectEvents(t *testing.T, w watch.Interface, want ...wantEvent) {
	t.Helper()
	for i, we := range want {
		ev := nextNonBookmark(t, w)
		if ev.Type == watch.Error {
			t.Fatalf("event %d: error %v", i, ev.Object)
		}
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("event %d: object %T, want *Pod", i, ev.Object)
		}
		if ev.Type != we.typ || pod.Name != we.name {
			t.Fatalf("event %d = %s %s, want %s %s", i, ev.Type, pod.Name, we.typ, we.name)
		}
		if we.rv != 0 && rvOf(t, pod) != we.rv {
			t.Fatalf("event %d (%s %s) resourceVersion = %d, want %d", i, ev.Type, pod.Name, rvOf(t, pod), we.rv)
		}
	}
}

func expectNoEvent(t *testing.T, w watch.Interface, within time.Duration) {
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

func ptr[T any](v T) *T { return &v }
