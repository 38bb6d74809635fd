package watchcache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics, err := watchcache.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watchcache.NewMetrics(reg); err == nil {
		t.Fatal("registering the metrics twice on one registry succeeded")
	}
	store := &fakeStore{revision: 10}
	cache := newCache(t, store, watchcache.Config{Metrics: metrics, HistorySize: 1, WatcherBuffer: 1, SlowWatcherTimeout: -1})
	kept := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	slow := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	stopped := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	stopped.Stop()
	waitClosed(t, stopped)
	for rev := int64(11); rev <= 15; rev++ {
		store.underlying().Add(makePod("p").ns("ns" + string(rune('a'+rev-11))).rv(rev).obj())
		nextEvent(t, kept)
	}
	waitClosed(t, slow)
	startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "11"}) // older than the history

	want := map[string]float64{
		"apiserver_terminated_watchers_total":         1,
		"apiserver_watch_cache_events_received_total": 5,
		"apiserver_watch_cache_initializations_total": 1,
		"apiserver_watch_cache_passed_through_total":  1,
		"apiserver_watch_cache_watchers":              1, // "kept"; the pass-through watch is etcd's
	}
	// The stopped watcher leaves the gauge once its goroutine has unregistered it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := gather(t, reg, fakeRoot)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics = %v, want %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gather returns each metric's value for resource label root.
func gather(t *testing.T, reg *prometheus.Registry, root string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "resource" || l.GetValue() != root {
					continue
				}
				switch {
				case m.GetCounter() != nil:
					out[f.GetName()] = m.GetCounter().GetValue()
				case m.GetGauge() != nil:
					out[f.GetName()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}
