package watchcache_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

// recordingUpdater records the cached copies the watch cache hands to GuaranteedUpdateFrom.
type recordingUpdater struct {
	*etcd3.Store
	mu     sync.Mutex
	cached []runtime.Object
}

func (s *recordingUpdater) GuaranteedUpdateFrom(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object) error {
	s.mu.Lock()
	s.cached = append(s.cached, cached)
	s.mu.Unlock()
	return s.Store.GuaranteedUpdateFrom(ctx, key, dest, ignoreNotFound, preconditions, tryUpdate, cached)
}

func (s *recordingUpdater) calls() []runtime.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]runtime.Object(nil), s.cached...)
}

// TestUpdateStartsFromTheCachedObject: once a resource is cached, an update through the cache
// hands the store the cached object (no read of the key); before that, and for a key the cache
// does not hold, the store reads as usual. Either way the update lands.
func TestUpdateStartsFromTheCachedObject(t *testing.T) {
	store := &recordingUpdater{Store: newPodStore(t, env.client(t))}
	cache := newCache(t, store, watchcache.Config{})
	root := rootFor(t)
	pod := mustCreate(t, store, root, makePod("web").ns("default").obj())
	key := keyOf(root, pod)

	// No cache of the resource yet: an update does not start one, and reads the key.
	mustUpdate(t, cache, key, func(p *corev1.Pod) { p.Spec.NodeName = "a" })
	if got := store.calls(); len(got) != 0 {
		t.Fatalf("an update with no cache of the resource got a cached copy: %v", got)
	}

	w := startWatch(t, cache, root, storage.ListOptions{Recursive: true})
	nextEvent(t, w) // the cache holds the pod
	updated := mustUpdate(t, cache, key, func(p *corev1.Pod) { p.Labels = map[string]string{"n": "1"} })
	// The cache may not have seen the first update yet when the second runs; then the store
	// retries on the stored pod. Either way it was offered the cached pod.
	got := store.calls()
	if len(got) != 1 || got[0] == nil {
		t.Fatalf("cached copies handed to the store: %v, want the cached pod", got)
	}
	if c := got[0].(*corev1.Pod); c.Name != "web" || c.ResourceVersion == "" {
		t.Fatalf("cached copy %s rv %q", c.Name, c.ResourceVersion)
	}
	if updated.Spec.NodeName != "a" || updated.Labels["n"] != "1" {
		t.Fatalf("update result node %q labels %v", updated.Spec.NodeName, updated.Labels)
	}

	// A key under the cached root that the cache does not hold: the store reads it.
	other := mustCreate(t, store, root, makePod("other").ns("default").obj())
	missing := keyOf(root, other) + "-absent"
	err := cache.GuaranteedUpdate(context.Background(), missing, &corev1.Pod{}, false, nil, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	if !storage.IsNotFound(err) {
		t.Fatalf("update of an absent key = %v, want NotFound", err)
	}
	if n := len(store.calls()); n != 1 {
		t.Fatalf("%d cached copies after an absent key's update, want still 1", n)
	}
}
