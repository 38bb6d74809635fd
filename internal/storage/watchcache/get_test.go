package watchcache_test

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/etcd3"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

// countingGetter counts the reads of one key that reach the store.
type countingGetter struct {
	*etcd3.Store
	gets atomic.Int32
}

func (s *countingGetter) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	s.gets.Add(1)
	return s.Store.Get(ctx, key, opts, out)
}

// TestGetAnyVersionFromMemory: once a resource is cached, a read at resourceVersion "0" of a key
// the cache holds is answered from memory with a copy of its own; a key the cache does not hold,
// a resource not cached, and every other resourceVersion are read from the store.
func TestGetAnyVersionFromMemory(t *testing.T) {
	store := &countingGetter{Store: newPodStore(t, env.client(t))}
	cache := newCache(t, store, watchcache.Config{})
	root := rootFor(t)
	pod := mustCreate(t, store, root, makePod("web").ns("default").obj())
	key := keyOf(root, pod)
	ctx := context.Background()
	get := func(rv string) (*corev1.Pod, int32, error) {
		before := store.gets.Load()
		out := &corev1.Pod{}
		err := cache.Get(ctx, key, storage.GetOptions{ResourceVersion: rv}, out)
		return out, store.gets.Load() - before, err
	}

	// No cache of the resource: the store answers, and no cache is started for it.
	if got, reads, err := get("0"); err != nil || reads != 1 || got.Name != "web" {
		t.Fatalf("uncached read: %s, %d store reads, %v; want web from the store", got.Name, reads, err)
	}

	w := startWatch(t, cache, root, storage.ListOptions{Recursive: true})
	nextEvent(t, w) // the cache holds the pod
	got, reads, err := get("0")
	if err != nil || reads != 0 {
		t.Fatalf("cached read: %v, %d store reads; want none", err, reads)
	}
	if got.Name != "web" || got.ResourceVersion != pod.ResourceVersion || got.UID != pod.UID {
		t.Fatalf("cached read = %s rv %s uid %s, want %s rv %s uid %s", got.Name, got.ResourceVersion, got.UID, pod.Name, pod.ResourceVersion, pod.UID)
	}
	// The answer is the caller's own: changing it changes nothing in the cache.
	got.Labels = map[string]string{"changed": "by the caller"}
	if again, _, _ := get("0"); again.Labels["changed"] != "" {
		t.Fatalf("a caller's change reached the cache: %v", again.Labels)
	}

	// A consistent read and an exact revision go to the store.
	for _, rv := range []string{"", pod.ResourceVersion} {
		if _, reads, err := get(rv); err != nil || reads != 1 {
			t.Fatalf("read at %q: %v, %d store reads; want 1", rv, err, reads)
		}
	}

	// A key the cache does not hold is looked up in the store, which says it is missing.
	before := store.gets.Load()
	err = cache.Get(ctx, key+"-absent", storage.GetOptions{ResourceVersion: "0"}, &corev1.Pod{})
	if !storage.IsNotFound(err) || store.gets.Load()-before != 1 {
		t.Fatalf("absent key: %v after %d store reads; want NotFound from the store", err, store.gets.Load()-before)
	}
	if err := cache.Get(ctx, key+"-absent", storage.GetOptions{ResourceVersion: "0", IgnoreNotFound: true}, &corev1.Pod{}); err != nil {
		t.Fatalf("absent key with IgnoreNotFound: %v", err)
	}
}
