package watchcache_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

const fakeRoot = "/registry/core/pods/"

func TestResourceRoot(t *testing.T) {
	tests := []struct {
		key, want string
		ok        bool
	}{
		{"/registry/core/pods/", "/registry/core/pods/", true},
		{"/registry/core/pods/default/", "/registry/core/pods/", true},
		{"/registry/core/pods/default/web-0", "/registry/core/pods/", true},
		{"/registry/core/nodes/n1", "/registry/core/nodes/", true},
		{"/registry/apps/deployments", "/registry/apps/deployments/", true},
		{"/registry/core/", "", false},
		{"registry/core/pods/", "", false},
		{"//core/pods/", "", false},
	}
	for _, tt := range tests {
		got, ok := watchcache.ResourceRoot(tt.key)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ResourceRoot(%q) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNewRequiresTypes(t *testing.T) {
	if _, err := watchcache.New(&fakeStore{}, watchcache.Config{}); err == nil {
		t.Fatal("New without NewFunc/NewListFunc succeeded")
	}
	if _, err := watchcache.New(nil, watchcache.Config{NewFunc: newPod, NewListFunc: newPodList}); err == nil {
		t.Fatal("New without a store succeeded")
	}
}

func TestWatchOlderThanHistoryGoesToTheStore(t *testing.T) {
	store := &fakeStore{revision: 10}
	cache := newCache(t, store, watchcache.Config{HistorySize: 2})
	startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	for rev := int64(11); rev <= 15; rev++ {
		store.underlying().Add(makePod("p" + string(rune('a'+rev-11))).rv(rev).obj())
	}
	// History holds 14 and 15: every change after 13 is there.
	w := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "13"})
	if got := collect(t, w, 2); got[0].rv != 14 || got[1].rv != 15 {
		t.Fatalf("from history: %v, want revisions 14, 15", got)
	}
	if n := len(store.calls()); n != 1 {
		t.Fatalf("store watches = %d, want 1", n)
	}
	startWatch(t, cache, fakeRoot+"default/", storage.ListOptions{Recursive: true, ResourceVersion: "12"})
	calls := store.calls()
	if len(calls) != 2 || calls[1].prefix != fakeRoot+"default/" || calls[1].opts.ResourceVersion != "12" {
		t.Fatalf("store watches = %+v, want the rv 12 watch passed through unchanged", calls)
	}
}

func TestSlowWatcherIsClosedAfterItsBufferedEvents(t *testing.T) {
	store := &fakeStore{revision: 10}
	cache := newCache(t, store, watchcache.Config{WatcherBuffer: 2, SlowWatcherTimeout: -1})
	slow := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	fast := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	const n = 8
	for rev := int64(11); rev < 11+n; rev++ {
		store.underlying().Add(makePod("p").ns("ns" + string(rune('a'+rev-11))).rv(rev).obj())
		if got := summarize(t, nextEvent(t, fast)); got.rv != rev {
			t.Fatalf("fast watcher got %v, want revision %d", got, rev)
		}
	}
	delivered := waitClosed(t, slow)
	if len(delivered) < 2 || len(delivered) >= n {
		t.Fatalf("slow watcher got %d events before closing, want its buffer's worth (2..%d)", len(delivered), n-1)
	}
	for i, ev := range delivered {
		if got := summarize(t, ev); got.rv != int64(11+i) {
			t.Fatalf("slow watcher event %d = %v, want revision %d (in order, no gaps)", i, got, 11+i)
		}
	}
	// The client resumes from its last revision and is served from history.
	resumed := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "11"})
	if got := collect(t, resumed, n-1); got[0].rv != 12 || got[n-2].rv != 10+n {
		t.Fatalf("resumed watch = %v, want revisions 12..%d", got, 10+n)
	}
}

func TestSlowWatcherGetsTimeToCatchUp(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := &fakeStore{revision: 10}
	cache := newCache(t, store, watchcache.Config{Clock: clk, WatcherBuffer: 1, SlowWatcherTimeout: time.Second})
	w := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	waitForWaiters(t, clk, 1) // the bookmark ticker

	addEvents := func(from, to int64) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for rev := from; rev <= to; rev++ {
				store.underlying().Add(makePod("p").ns("ns" + strconv.FormatInt(rev, 10)).rv(rev).obj())
			}
		}()
		return done
	}
	// Unread, the watcher soon holds as many events as it can; the next one makes delivery wait.
	added := addEvents(11, 20)
	waitForWaiters(t, clk, 2) // the slow-watcher timer
	// Reading within the timeout lets delivery go on, and nothing is lost.
	if got := collect(t, w, 10); got[0].rv != 11 || got[9].rv != 20 {
		t.Fatalf("events = %v, want 11..20", got)
	}
	<-added
	waitForWaiters(t, clk, -1) // the first timer stopped

	added = addEvents(21, 40)
	waitForWaiters(t, clk, 2)
	clk.Step(time.Second)
	delivered := waitClosed(t, w)
	<-added // the cache goes on without the closed watcher
	if len(delivered) == 0 || len(delivered) >= 20 {
		t.Fatalf("after the timeout the watcher delivered %d events, want what it held (1..19), then close", len(delivered))
	}
	for i, ev := range delivered {
		if got := summarize(t, ev); got.rv != int64(21+i) {
			t.Fatalf("event %d = %v, want revision %d", i, got, 21+i)
		}
	}
}

// waitForWaiters waits until the clock has n waiters, or for n = -1 until it has only the ticker.
func waitForWaiters(t *testing.T, clk *clocktesting.FakeClock, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	done := func() bool { return clk.Waiters() >= n }
	if n < 0 {
		n = 1
		done = func() bool { return clk.Waiters() == 1 }
	}
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("clock waiters = %d, want %d", clk.Waiters(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPeriodicBookmarks(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := &fakeStore{revision: 10}
	interval := 5 * time.Second
	cache := newCache(t, store, watchcache.Config{Clock: clk, BookmarkInterval: interval})
	withBookmarks := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10", ProgressNotify: true})
	filtered := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10", ProgressNotify: true,
		Predicate: selectLabels(t, "app=web")})
	without := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	waitForWaiters(t, clk, 1)

	expectBookmark := func(w watch.Interface, rev int64) {
		t.Helper()
		ev := nextEvent(t, w)
		pod, _ := ev.Object.(*corev1.Pod)
		if ev.Type != watch.Bookmark || pod == nil || rvOf(t, pod) != rev || pod.Name != "" {
			t.Fatalf("got %s %+v, want a BOOKMARK at %d", ev.Type, ev.Object, rev)
		}
	}
	// Idle watches get a bookmark every interval, even when the revision has not moved.
	clk.Step(interval)
	expectBookmark(withBookmarks, 10)
	expectBookmark(filtered, 10)
	clk.Step(interval)
	expectBookmark(withBookmarks, 10)
	expectBookmark(filtered, 10)

	// etcd's progress moves the cache's revision; the next bookmarks carry it.
	store.underlying().Action(watch.Bookmark, bookmarkAt(20))
	clk.Step(interval)
	expectBookmark(withBookmarks, 20)
	expectBookmark(filtered, 20)

	// A change: the matching watcher gets it and no bookmark at the next tick; the filtered one
	// only sees the revision move through its bookmark.
	store.underlying().Add(makePod("a").rv(21).obj())
	if got := summarize(t, nextEvent(t, withBookmarks)); got.rv != 21 {
		t.Fatalf("got %v, want ADDED a@21", got)
	}
	clk.Step(interval)
	expectBookmark(filtered, 21)
	expectNoEvent(t, withBookmarks, 200*time.Millisecond)
	clk.Step(interval)
	expectBookmark(withBookmarks, 21)

	if got := summarize(t, nextEvent(t, without)); got.rv != 21 {
		t.Fatalf("watch without bookmarks got %v, want only ADDED a@21", got)
	}
	select {
	case ev := <-without.ResultChan():
		t.Fatalf("watch without bookmarks got %s", ev.Type)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestUnderlyingFailureClosesWatchersAndRestarts(t *testing.T) {
	tests := []struct {
		name string
		fail func(w *watch.FakeWatcher)
	}{
		{"error event", func(w *watch.FakeWatcher) {
			w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old"})
		}},
		{"channel closed", func(w *watch.FakeWatcher) { w.Stop() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{revision: 10}
			cache := newCache(t, store, watchcache.Config{})
			a := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
			b := startWatch(t, cache, fakeRoot+"default/x", storage.ListOptions{ResourceVersion: "10"})
			store.underlying().Add(makePod("x").rv(11).obj())
			tt.fail(store.underlying())
			if got := waitClosed(t, a); len(got) != 1 || summarize(t, got[0]).rv != 11 {
				t.Fatalf("watcher a delivered %v before closing, want ADDED x@11", got)
			}
			if got := waitClosed(t, b); len(got) != 1 {
				t.Fatalf("watcher b delivered %v before closing, want ADDED x@11", got)
			}
			// The next watch starts a fresh cache from a new list.
			store.mu.Lock()
			store.revision = 30
			store.mu.Unlock()
			c := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "30"})
			calls := store.calls()
			if len(calls) != 2 || calls[1].opts.ResourceVersion != "30" {
				t.Fatalf("store watches = %+v, want a second underlying watch from 30", calls)
			}
			calls[1].watcher.Add(makePod("y").rv(31).obj())
			if got := summarize(t, nextEvent(t, c)); got.name != "y" || got.rv != 31 {
				t.Fatalf("after restart got %v, want ADDED y@31", got)
			}
		})
	}
}

func TestStopClosesWatchers(t *testing.T) {
	store := &fakeStore{revision: 10}
	cfg := watchcache.Config{NewFunc: newPod, NewListFunc: newPodList}
	cache, err := watchcache.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	cache.Stop()
	waitClosed(t, w)
	if _, err := cache.Watch(context.Background(), fakeRoot, storage.ListOptions{Recursive: true}); err == nil {
		t.Fatal("watch on a stopped cache succeeded")
	}
}

func TestWatcherStopEndsOnlyThatWatch(t *testing.T) {
	store := &fakeStore{revision: 10}
	cache := newCache(t, store, watchcache.Config{})
	stopped := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	ctx, cancel := context.WithCancel(context.Background())
	cancelled, err := cache.Watch(ctx, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	other := startWatch(t, cache, fakeRoot, storage.ListOptions{Recursive: true, ResourceVersion: "10"})
	stopped.Stop()
	stopped.Stop()
	cancel()
	waitClosed(t, stopped)
	waitClosed(t, cancelled)
	store.underlying().Add(makePod("a").rv(11).obj())
	if got := summarize(t, nextEvent(t, other)); got.rv != 11 {
		t.Fatalf("remaining watcher got %v, want ADDED a@11", got)
	}
}
