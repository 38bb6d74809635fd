package watchcache_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

func TestWatchFromCompactedRevisionIsExpired(t *testing.T) {
	member := etcdtest.StartEmbedded(t, etcdtest.Options{})
	client := etcdtest.Client(t, member)
	store := newPodStore(t, client)
	cache := newCache(t, store, watchcache.Config{HistorySize: 2})
	root := "/registry/core/pods/"
	first := mustCreate(t, store, root, makePod("a").obj())
	startWatch(t, cache, root, storage.ListOptions{Recursive: true}) // the cache starts after "a"
	for i := range 5 {
		mustCreate(t, store, root, makePod("p"+strconv.Itoa(i)).obj())
	}
	latest, err := store.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Compact(context.Background(), latest); err != nil {
		t.Fatal(err)
	}
	w, err := cache.Watch(context.Background(), root, storage.ListOptions{Recursive: true, ResourceVersion: first.ResourceVersion})
	if err != nil {
		if !storage.IsExpired(err) {
			t.Fatalf("watch from a compacted revision = %v, want Expired", err)
		}
		return
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	status, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || status.Code != http.StatusGone {
		t.Fatalf("first event = %s %+v, want ERROR with a 410 Status", ev.Type, ev.Object)
	}
	// A recent revision is still served, from the history.
	recent := startWatch(t, cache, root, storage.ListOptions{Recursive: true, ResourceVersion: strconv.FormatInt(latest-1, 10)})
	if got := summarize(t, nextNonBookmark(t, recent)); got.rv != latest {
		t.Fatalf("watch from %d got %v, want the change at %d", latest-1, got, latest)
	}
}

// TestConcurrentWritersAndWatchers runs writers and many filtered cached watchers at once (use -race)
// and checks each cached watcher delivered exactly what a direct etcd watch with the same options did.
func TestConcurrentWritersAndWatchers(t *testing.T) {
	store := newPodStore(t, env.client(t))
	cache := newCache(t, store, watchcache.Config{})
	root := rootFor(t)
	start := mustCreate(t, store, root, makePod("start").obj())

	type watchSpec struct {
		prefix string
		opts   storage.ListOptions
	}
	from := start.ResourceVersion
	specs := []watchSpec{
		{root, storage.ListOptions{Recursive: true, ResourceVersion: from}},
		{root, storage.ListOptions{Recursive: true, ResourceVersion: from, ProgressNotify: true, Predicate: selectLabels(t, "app=web")}},
		{root, storage.ListOptions{Recursive: true, ResourceVersion: from, Predicate: selectLabels(t, "app in (web,db)")}},
		{root + "ns0/", storage.ListOptions{Recursive: true, ResourceVersion: from}},
		{root + "ns1/", storage.ListOptions{Recursive: true, ResourceVersion: from, Predicate: selectFields(t, "spec.nodeName=n1")}},
		{root + "ns0/p3", storage.ListOptions{ResourceVersion: from}},
	}
	const copies = 4 // several cached watchers per spec share the fan-out
	type pair struct {
		direct watch.Interface
		cached []watch.Interface
	}
	pairs := make([]pair, len(specs))
	for i, sp := range specs {
		pairs[i].direct = startWatch(t, store, sp.prefix, sp.opts)
		for range copies {
			pairs[i].cached = append(pairs[i].cached, startWatch(t, cache, sp.prefix, sp.opts))
		}
	}

	const writers, opsPerWriter = 4, 60
	var wg sync.WaitGroup
	for wi := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(wi), 7))
			ns := "ns" + strconv.Itoa(wi%2)
			for op := range opsPerWriter {
				name := "p" + strconv.Itoa(rng.IntN(5)+wi*0)
				key := root + ns + "/" + name
				labelValues := []string{"web", "db", "", "cache"}
				ctx := context.Background()
				switch rng.IntN(3) {
				case 0:
					pod := makePod(name).ns(ns).label("app", labelValues[rng.IntN(4)]).node("n" + strconv.Itoa(rng.IntN(2))).obj()
					if err := store.Create(ctx, key, pod, &corev1.Pod{}); err != nil && !storage.IsExists(err) {
						t.Errorf("writer %d op %d: %v", wi, op, err)
					}
				case 1:
					err := store.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
						pod := cur.(*corev1.Pod)
						setLabel("app", labelValues[rng.IntN(4)])(pod)
						pod.Spec.NodeName = "n" + strconv.Itoa(rng.IntN(2))
						pod.Annotations = map[string]string{"op": strconv.Itoa(op)}
						return pod, nil
					})
					if err != nil && !storage.IsNotFound(err) {
						t.Errorf("writer %d op %d: %v", wi, op, err)
					}
				case 2:
					if err := store.Delete(ctx, key, &corev1.Pod{}, nil, nil); err != nil && !storage.IsNotFound(err) {
						t.Errorf("writer %d op %d: %v", wi, op, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	// A last change every watch sees marks the end of each stream: p3 recreated matching every
	// predicate in both namespaces.
	var endRV [2]int64
	for i, ns := range []string{"ns0", "ns1"} {
		key := root + ns + "/p3"
		if err := store.Delete(context.Background(), key, &corev1.Pod{}, nil, nil); err != nil && !storage.IsNotFound(err) {
			t.Fatal(err)
		}
		endRV[i] = rvOf(t, mustCreate(t, store, root, makePod("p3").ns(ns).label("app", "web").node("n1").obj()))
	}
	for i, p := range pairs {
		end := endRV[1]
		if sp := specs[i].prefix; sp == root+"ns0/" || sp == root+"ns0/p3" {
			end = endRV[0]
		}
		want := readUntil(t, p.direct, end)
		for c, w := range p.cached {
			got := readUntil(t, w, end)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("spec %d copy %d: cached watch delivered %d events\n  %v\ndirect watch %d events\n  %v", i, c, len(got), got, len(want), want)
			}
		}
		if len(want) == 0 {
			t.Fatalf("spec %d saw nothing", i)
		}
	}
}

// readUntil reads non-bookmark events up to and including the one at revision end.
func readUntil(t *testing.T, w watch.Interface, end int64) []seen {
	t.Helper()
	var out []seen
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed early")
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			s := summarize(t, ev)
			out = append(out, s)
			if s.rv >= end {
				return out
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event at revision %d within 10s; got %v", end, out)
		}
	}
}
