package watchcache_test

import (
	"strconv"
	"sync"
	"testing"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

// BenchmarkFanout measures dispatching one change to 100 cached watchers (half of them filtering
// by label) and each watcher's copy of it, without etcd or HTTP: the cost the cache adds per event.
func BenchmarkFanout(b *testing.B) {
	const watchers = 100
	store := &fakeStore{revision: 1}
	cache := newCache(b, store, watchcache.Config{})
	var wg sync.WaitGroup
	for i := range watchers {
		opts := storage.ListOptions{Recursive: true, ResourceVersion: "1"}
		if i%2 == 1 {
			opts.Predicate = selectLabels(b, "app=web")
		}
		w := startWatch(b, cache, fakeRoot, opts)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < b.N; n++ {
				if _, ok := <-w.ResultChan(); !ok {
					return
				}
			}
		}()
	}
	pod := makePod("p").label("app", "web").obj()
	b.ResetTimer()
	for n := range b.N {
		next := pod.DeepCopy()
		next.Name = "p" + strconv.Itoa(n)
		next.ResourceVersion = strconv.Itoa(n + 2)
		store.underlying().Add(next)
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*watchers), "ns/delivery")
}
