package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"reflect"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

// sharedCounter counts the lists the cache served from memory.
type sharedCounter struct {
	*watchcache.Cache
	served *atomic.Int64
}

func (s sharedCounter) ListShared(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.SharedList, bool, error) {
	list, served, err := s.Cache.ListShared(ctx, prefix, opts)
	if served {
		s.served.Add(1)
	}
	return list, served, err
}

// TestStreamedListIsTheEncodersBytes: lists served from the watch cache's shared objects are
// byte for byte what encoding the list object gives, in JSON and protobuf, for whole lists, pages
// and selections; a second list reuses the memoized encodings.
func TestStreamedListIsTheEncodersBytes(t *testing.T) {
	var served atomic.Int64
	c := startCachedTestCluster(t, &served)
	ctx := context.Background()
	ns := c.namespace(t, "stream")
	for i := range 30 {
		pod := makePod(fmt.Sprintf("p%02d", i)).ns(ns).label("app", []string{"web", "db"}[i%2]).obj()
		pod.Annotations = map[string]string{"note": "<&> escaped in JSON"}
		if _, err := c.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h := handlerOf(t, c.api, podsGVR)
	// The cache starts on the first list; wait until lists are served from it.
	for served.Load() == 0 {
		if _, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	queries := []url.Values{
		{},
		{"limit": {"7"}},
		{"labelSelector": {"app=web"}, "limit": {"4"}},
		{"resourceVersion": {"0"}},
		{"labelSelector": {"app=none"}},
	}
	for _, accept := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		choice, err := negotiateOutput(accept, h.mediaTypes, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			for round := range 2 { // the second round reads memoized encodings
				before := served.Load()
				req := c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/"+ns+"/pods").SetHeader("Accept", accept)
				for k, v := range q {
					req = req.Param(k, v[0])
				}
				got, err := req.Do(ctx).Raw()
				if err != nil {
					t.Fatalf("%s %v: %v", accept, q, err)
				}
				if served.Load() == before {
					t.Fatalf("%s %v round %d: not served from the cache's shared objects", accept, q, round)
				}
				opts, err := h.listOptions(q, true, false)
				if err != nil {
					t.Fatal(err)
				}
				want := encodeListTheOrdinaryWay(t, h, choice, ns, opts)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %v round %d: streamed %d bytes differ from the encoder's %d:\n%q\n%q", accept, q, round, len(got), len(want), head(got), head(want))
				}
			}
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 300)] }

// encodeListTheOrdinaryWay is what the list handler writes without shared objects.
func encodeListTheOrdinaryWay(t *testing.T, h *resourceHandler, choice mediaChoice, ns string, opts storage.ListOptions) []byte {
	t.Helper()
	list, err := h.st.List(context.Background(), ns, opts)
	if err != nil {
		t.Fatal(err)
	}
	_ = meta.EachListItem(list, func(item runtime.Object) error {
		item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return nil
	})
	if _, ok := list.(*corev1.PodList); !ok {
		t.Fatalf("list is %T", list)
	}
	var buf bytes.Buffer
	if err := h.s.codecs.EncoderForVersion(choice.info.Serializer, h.res.GroupVersion).Encode(list, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// startCachedTestCluster is the test cluster with every resource behind a watch cache, as
// internal/cluster assembles it; served counts the lists the caches served from memory.
func startCachedTestCluster(t *testing.T, served *atomic.Int64) *testCluster {
	return startTestCluster(t, func(cfg *Config) {
		inner := cfg.Storage
		cfg.Storage = func(res *registry.Resource) (storage.Interface, error) {
			st, err := inner(res)
			if err != nil {
				return nil, err
			}
			cache, err := watchcache.New(st, watchcache.Config{NewFunc: res.New, NewListFunc: res.NewList})
			if err != nil {
				return nil, err
			}
			t.Cleanup(cache.Stop)
			return sharedCounter{Cache: cache, served: served}, nil
		}
	})
}

// TestSharedWatchEvents: watches served from the cache with shared objects deliver, in JSON and
// protobuf, the same events as the objects the writes returned, including an object leaving a
// label selector (DELETED with its last matching state).
func TestSharedWatchEvents(t *testing.T) {
	var served atomic.Int64
	c := startCachedTestCluster(t, &served)
	ctx := context.Background()
	ns := c.namespace(t, "watchshare")
	pods := c.client.CoreV1().Pods(ns)
	start, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	protoCfg := *c.admin
	protoCfg.ContentType = runtime.ContentTypeProtobuf
	protoCfg.AcceptContentTypes = runtime.ContentTypeProtobuf
	protoClient, err := kubernetes.NewForConfig(&protoCfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{ResourceVersion: start.ResourceVersion, LabelSelector: "app=web"}
	var watchers []watch.Interface
	for _, cs := range []kubernetes.Interface{c.client, protoClient, c.client} {
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		watchers = append(watchers, w)
	}
	created, err := pods.Create(ctx, makePod("a").ns(ns).label("app", "web").obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	step := created.DeepCopy()
	step.Annotations = map[string]string{"step": "2"}
	updated, err := pods.Update(ctx, step, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	away := updated.DeepCopy()
	away.Labels["app"] = "db"
	moved, err := pods.Update(ctx, away, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ watch.EventType
		rv  string
		pod *corev1.Pod
	}{{watch.Added, created.ResourceVersion, created}, {watch.Modified, updated.ResourceVersion, updated}, {watch.Deleted, moved.ResourceVersion, updated}}
	for i, w := range watchers {
		for _, exp := range want {
			ev := nextEvent(t, w)
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != exp.typ || pod.ResourceVersion != exp.rv {
				t.Fatalf("watcher %d: %s %T, want %s at %s", i, ev.Type, ev.Object, exp.typ, exp.rv)
			}
			got, wantPod := pod.DeepCopy(), exp.pod.DeepCopy()
			got.TypeMeta, wantPod.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			got.ResourceVersion, wantPod.ResourceVersion = "", ""
			if !reflect.DeepEqual(got, wantPod) {
				t.Fatalf("watcher %d %s: object differs:\n%+v\n%+v", i, ev.Type, got, wantPod)
			}
		}
	}
}
