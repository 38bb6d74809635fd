package watchcache_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

func startShared(t *testing.T, c *watchcache.Cache, prefix string, opts storage.ListOptions) watch.Interface {
	t.Helper()
	w, err := c.WatchShared(context.Background(), prefix, opts)
	if err != nil {
		t.Fatalf("shared watch %s: %v", prefix, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// initialPods reads a watch-list's initial events up to the annotated bookmark.
func initialPods(t *testing.T, w watch.Interface) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for {
		ev := nextEvent(t, w)
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("%s event carries %T", ev.Type, ev.Object)
		}
		if ev.Type == watch.Bookmark {
			if pod.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
				return pods
			}
			continue
		}
		if ev.Type != watch.Added {
			t.Fatalf("initial event %s %s, want ADDED", ev.Type, pod.Name)
		}
		pods = append(pods, pod)
	}
}

// Shared watchers get the cache's own objects: the same pointer in every shared watcher, for the
// initial state and for later changes, while ordinary watchers keep getting copies.
func TestWatchSharedHandsOutTheCachedObjects(t *testing.T) {
	store := newPodStore(t, env.client(t))
	cache := newCache(t, store, watchcache.Config{})
	root := rootFor(t)
	mustCreate(t, store, root, makePod("a").label("app", "web").obj())
	mustCreate(t, store, root, makePod("b").obj())
	watchList := storage.ListOptions{Recursive: true, SendInitialEvents: ptr(true),
		ResourceVersionMatch: string(metav1.ResourceVersionMatchNotOlderThan), ProgressNotify: true}
	first := startShared(t, cache, root, watchList)
	second := startShared(t, cache, root, watchList)
	selected := watchList
	selected.Predicate = selectLabels(t, "app=web")
	web := startShared(t, cache, root, selected)
	copied := startWatch(t, cache, root, storage.ListOptions{Recursive: true, ResourceVersion: "0"})

	one, two, onlyWeb := initialPods(t, first), initialPods(t, second), initialPods(t, web)
	if len(one) != 2 || len(two) != 2 || one[0] != two[0] || one[1] != two[1] {
		t.Fatalf("initial objects of two shared watchers: %v and %v, want the same two pointers", one, two)
	}
	if len(onlyWeb) != 1 || onlyWeb[0] != one[0] {
		t.Fatalf("label-selected initial objects = %v, want only a, shared", onlyWeb)
	}
	if fromCopy := nextEvent(t, copied).Object.(*corev1.Pod); fromCopy == one[0] {
		t.Fatal("an ordinary watcher got the cache's own object")
	}

	updated := mustUpdate(t, store, keyOf(root, one[0]), setLabel("app", "db"))
	evOne, evTwo := nextNonBookmark(t, first), nextNonBookmark(t, second)
	if evOne.Type != watch.Modified || evOne.Object != evTwo.Object || rvOf(t, evOne.Object) != rvOf(t, updated) {
		t.Fatalf("update reached shared watchers as %s %p and %s %p, want one MODIFIED object at %s",
			evOne.Type, evOne.Object, evTwo.Type, evTwo.Object, updated.ResourceVersion)
	}
	// The selected watcher sees a leave the selection as DELETED.
	if got := summarize(t, nextNonBookmark(t, web)); got.typ != watch.Deleted || got.name != "a" || got.label != "web" {
		t.Fatalf("selected watcher got %v, want DELETED a with its last matching state", got)
	}
}

// A shared watch from a resourceVersion resumes from the history, like Watch.
func TestWatchSharedResumesFromARevision(t *testing.T) {
	store := newPodStore(t, env.client(t))
	cache := newCache(t, store, watchcache.Config{})
	root := rootFor(t)
	a := mustCreate(t, store, root, makePod("a").obj())
	startWatch(t, cache, root, storage.ListOptions{Recursive: true, ResourceVersion: a.ResourceVersion}) // fills the cache
	b := mustCreate(t, store, root, makePod("b").obj())
	w := startShared(t, cache, root, storage.ListOptions{Recursive: true, ResourceVersion: a.ResourceVersion})
	if got := summarize(t, nextNonBookmark(t, w)); got.typ != watch.Added || got.name != "b" || got.rv != rvOf(t, b) {
		t.Fatalf("resumed shared watch got %v, want ADDED b@%s", got, b.ResourceVersion)
	}
}

// Pods with identical managedFields share one copy of the field sets in the cache (intern.go),
// whether the cache got them from its first list or from its watch.
func TestCacheSharesIdenticalManagedFields(t *testing.T) {
	store := newPodStore(t, env.client(t))
	root := rootFor(t)
	withFields := func(name string) *corev1.Pod {
		p := makePod(name).label("app", "web").obj()
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{}}}`)}}
		return p
	}
	mustCreate(t, store, root, withFields("listed-a"))
	mustCreate(t, store, root, withFields("listed-b"))
	cache := newCache(t, store, watchcache.Config{})
	w := startShared(t, cache, root, storage.ListOptions{Recursive: true, SendInitialEvents: ptr(true),
		ResourceVersionMatch: string(metav1.ResourceVersionMatchNotOlderThan), ProgressNotify: true})
	pods := initialPods(t, w)
	mustCreate(t, store, root, withFields("watched"))
	ev := nextNonBookmark(t, w)
	pods = append(pods, ev.Object.(*corev1.Pod))
	if len(pods) != 3 {
		t.Fatalf("got %d pods, want 3", len(pods))
	}
	first := &pods[0].ManagedFields[0].FieldsV1.GetRawBytes()[0]
	for _, p := range pods[1:] {
		if &p.ManagedFields[0].FieldsV1.GetRawBytes()[0] != first {
			t.Errorf("pod %s holds its own copy of an identical field set", p.Name)
		}
	}
}
