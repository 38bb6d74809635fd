package etcd3_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/storage"
)

func startWatch(t *testing.T, s storage.Interface, prefix string, opts storage.ListOptions) watch.Interface {
	t.Helper()
	w, err := s.Watch(ctxFor(t), prefix, opts)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

func TestWatchFromResourceVersionAndResumeAfterRestart(t *testing.T) {
	client := env.client(t)
	s := newPodStore(t, client, storage.EncodingProtobuf)
	ctx := ctxFor(t)
	prefix := prefixFor(t)
	before := mustCreate(t, s, prefix+"default/old", makePod("old").obj())

	w := startWatch(t, s, prefix, storage.ListOptions{Recursive: true, ResourceVersion: before.ResourceVersion})
	a := mustCreate(t, s, prefix+"default/a", makePod("a").obj())
	updated := &corev1.Pod{}
	if err := s.GuaranteedUpdate(ctx, prefix+"default/a", updated, false, nil, setNode("n1")); err != nil {
		t.Fatal(err)
	}
	deleted := &corev1.Pod{}
	if err := s.Delete(ctx, prefix+"default/a", deleted, nil, nil); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w,
		wantEvent{watch.Added, "a", rvOf(t, a)},
		wantEvent{watch.Modified, "a", rvOf(t, updated)},
		// DELETED carries the last state at the revision of the deletion.
		wantEvent{watch.Deleted, "a", rvOf(t, deleted)},
	)
	w.Stop()

	// An API server restart: a new client and store resume from the last seen revision.
	resumeFrom := deleted.ResourceVersion
	b := mustCreate(t, s, prefix+"default/b", makePod("b").obj())
	restarted := newPodStore(t, etcdtest.Client(t, env.member(t)), storage.EncodingProtobuf)
	w2 := startWatch(t, restarted, prefix, storage.ListOptions{Recursive: true, ResourceVersion: resumeFrom})
	c := mustCreate(t, restarted, prefix+"default/c", makePod("c").obj())
	expectEvents(t, w2, wantEvent{watch.Added, "b", rvOf(t, b)}, wantEvent{watch.Added, "c", rvOf(t, c)})
}

func TestWatchInitialState(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			prefix := prefixFor(t)
			mustCreate(t, s, prefix+"default/a", makePod("a").obj())
			mustCreate(t, s, prefix+"default/b", makePod("b").obj())
			w := startWatch(t, s, prefix, storage.ListOptions{Recursive: true, ResourceVersion: rv})
			expectEvents(t, w, wantEvent{typ: watch.Added, name: "a"}, wantEvent{typ: watch.Added, name: "b"})
			c := mustCreate(t, s, prefix+"default/c", makePod("c").obj())
			expectEvents(t, w, wantEvent{watch.Added, "c", rvOf(t, c)})
		})
	}
	t.Run("sendInitialEvents=false starts now", func(t *testing.T) {
		prefix := prefixFor(t)
		mustCreate(t, s, prefix+"default/a", makePod("a").obj())
		w := startWatch(t, s, prefix, storage.ListOptions{Recursive: true, SendInitialEvents: ptr(false)})
		d := mustCreate(t, s, prefix+"default/d", makePod("d").obj())
		expectEvents(t, w, wantEvent{watch.Added, "d", rvOf(t, d)})
	})
}

func TestWatchSendInitialEventsEndsWithAnnotatedBookmark(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	prefix := prefixFor(t)
	mustCreate(t, s, prefix+"default/a", makePod("a").label("app", "web").obj())
	mustCreate(t, s, prefix+"default/b", makePod("b").obj())
	last := mustCreate(t, s, prefix+"default/c", makePod("c").label("app", "web").obj())

	w := startWatch(t, s, prefix, storage.ListOptions{
		Recursive: true, SendInitialEvents: ptr(true), ProgressNotify: true,
		Predicate: selectLabels(t, "app=web"),
	})
	expectEvents(t, w, wantEvent{typ: watch.Added, name: "a"}, wantEvent{typ: watch.Added, name: "c"})
	ev := nextEvent(t, w)
	if ev.Type != watch.Bookmark {
		t.Fatalf("event after the initial ones = %s, want BOOKMARK", ev.Type)
	}
	pod := ev.Object.(*corev1.Pod)
	if pod.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("bookmark annotations = %v, want %s=true", pod.Annotations, metav1.InitialEventsAnnotationKey)
	}
	if rvOf(t, pod) < rvOf(t, last) {
		t.Fatalf("bookmark resourceVersion %s older than the listed state %s", pod.ResourceVersion, last.ResourceVersion)
	}
}

func TestWatchBookmarks(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	prefix := prefixFor(t)
	created := mustCreate(t, s, prefix+"default/a", makePod("a").obj())
	w := startWatch(t, s, prefix, storage.ListOptions{Recursive: true, ResourceVersion: created.ResourceVersion, ProgressNotify: true})
	// etcd reports progress only once the store has moved past the watch's start revision: a
	// write elsewhere (in a cluster, leases and events never stop) lets the idle watch report.
	other := mustCreate(t, s, strings.TrimSuffix(prefix, "/pods/")+"-elsewhere/x", makePod("x").obj())
	ev := nextEvent(t, w)
	if ev.Type != watch.Bookmark {
		t.Fatalf("idle watch sent %s, want BOOKMARK", ev.Type)
	}
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		t.Fatalf("bookmark object %T, want *Pod", ev.Object)
	}
	if rvOf(t, pod) < rvOf(t, other) || pod.Name != "" || len(pod.Spec.Containers) != 0 {
		t.Fatalf("bookmark = %+v, want only a resourceVersion >= %s", pod, other.ResourceVersion)
	}

	quiet := startWatch(t, s, prefix, storage.ListOptions{Recursive: true, ResourceVersion: created.ResourceVersion})
	select {
	case ev := <-quiet.ResultChan():
		t.Fatalf("watch without bookmarks sent %s", ev.Type)
	case <-time.After(400 * time.Millisecond): // four progress intervals of the test member
	}
}

func TestWatchPredicateTransitions(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	ctx := ctxFor(t)
	prefix := prefixFor(t)
	key := prefix + "default/a"
	w := startWatch(t, s, prefix, storage.ListOptions{Recursive: true, SendInitialEvents: ptr(false), Predicate: selectLabels(t, "app=web")})

	setLabel := func(value string) *corev1.Pod {
		out := &corev1.Pod{}
		if err := s.GuaranteedUpdate(ctx, key, out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
			pod := cur.(*corev1.Pod)
			if value == "" {
				delete(pod.Labels, "app")
			} else {
				pod.Labels = map[string]string{"app": value}
			}
			pod.Annotations = map[string]string{"touched": strconv.FormatInt(time.Now().UnixNano(), 10)}
			return pod, nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}

	mustCreate(t, s, key, makePod("a").obj()) // not matching: nothing
	started := setLabel("web")                // starts matching: ADDED
	modified := setLabel("web")               // still matching: MODIFIED
	stopped := setLabel("db")                 // stops matching: DELETED with the last matching state
	setLabel("")                              // not matching either side: nothing
	deleted := &corev1.Pod{}
	if err := s.Delete(ctx, key, deleted, nil, nil); err != nil { // deleted while not matching: nothing
		t.Fatal(err)
	}
	back := mustCreate(t, s, key, makePod("a").label("app", "web").obj()) // created matching: ADDED

	expectEvents(t, w,
		wantEvent{watch.Added, "a", rvOf(t, started)},
		wantEvent{watch.Modified, "a", rvOf(t, modified)},
	)
	ev := nextNonBookmark(t, w)
	gone, _ := ev.Object.(*corev1.Pod)
	if ev.Type != watch.Deleted || gone == nil || gone.Labels["app"] != "web" || rvOf(t, gone) != rvOf(t, stopped) {
		t.Fatalf("stop-matching event = %s %+v, want DELETED of the app=web state at rv %s", ev.Type, gone, stopped.ResourceVersion)
	}
	expectEvents(t, w, wantEvent{watch.Added, "a", rvOf(t, back)})
	expectNoEvent(t, w, 200*time.Millisecond)
}

func TestWatchSingleKey(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	prefix := prefixFor(t)
	a := mustCreate(t, s, prefix+"default/a", makePod("a").obj())
	w := startWatch(t, s, prefix+"default/a", storage.ListOptions{ResourceVersion: a.ResourceVersion})
	mustCreate(t, s, prefix+"default/ab", makePod("ab").obj()) // shares the prefix, not the key
	updated := &corev1.Pod{}
	if err := s.GuaranteedUpdate(ctxFor(t), prefix+"default/a", updated, false, nil, setNode("n")); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w, wantEvent{watch.Modified, "a", rvOf(t, updated)})
	expectNoEvent(t, w, 200*time.Millisecond)
}

func TestWatchStops(t *testing.T) {
	s := newPodStore(t, env.client(t), storage.EncodingProtobuf)
	prefix := prefixFor(t)
	mustCreate(t, s, prefix+"default/a", makePod("a").obj())

	t.Run("Stop", func(t *testing.T) {
		w, err := s.Watch(context.Background(), prefix, storage.ListOptions{Recursive: true})
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		w.Stop()
		waitClosed(t, w)
	})
	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		w, err := s.Watch(ctx, prefix, storage.ListOptions{Recursive: true})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		waitClosed(t, w)
	})
	t.Run("consumer gone with a full buffer", func(t *testing.T) {
		w, err := s.Watch(context.Background(), prefix, storage.ListOptions{Recursive: true, ResourceVersion: "1"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 150; i++ {
			mustCreate(t, s, prefix+"default/burst"+strconv.Itoa(i), makePod("burst"+strconv.Itoa(i)).obj())
		}
		w.Stop()
		waitClosed(t, w)
	})
}

// waitClosed drains the watch and fails unless its channel closes, which is when the watch
// goroutine has returned.
func waitClosed(t *testing.T, w watch.Interface) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("watch channel not closed 10s after stop")
		}
	}
}

// A watch that reaches a change after etcd compacted the state before it gets the change
// without that state (etcd reads it at the revision before, when it sends the event). It
// cannot say what a deletion deleted, nor what a change replaced: the watcher gets 410 and
// relists, and never silence. A dropped deletion left a watch cache serving a deleted object
// (the robustness suite's sixth bug, ha-compact).
func TestWatchOfAChangeWhoseStateBeforeIsCompactedEndsWith410(t *testing.T) {
	client := etcdtest.Client(t, etcdtest.StartEmbedded(t, etcdtest.Options{}))
	s := newPodStore(t, client, storage.EncodingProtobuf)
	ctx := ctxFor(t)
	for _, tc := range []struct {
		name   string
		change func(key string) error
	}{
		{"deletion", func(key string) error { _, err := client.Delete(ctx, key); return err }},
		{"update", func(key string) error {
			pod := makePod("p").label("changed", "true").obj()
			return s.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false, nil,
				func(runtime.Object) (runtime.Object, error) { return pod, nil })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "/" + tc.name + "/pods/default/p"
			created := mustCreate(t, s, key, makePod("p").obj())
			if err := tc.change(key); err != nil {
				t.Fatal(err)
			}
			resp, err := client.Get(ctx, "/")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Compact(ctx, resp.Header.Revision); err != nil {
				t.Fatal(err)
			}
			w := startWatch(t, s, "/"+tc.name+"/pods/", storage.ListOptions{Recursive: true, ResourceVersion: created.ResourceVersion})
			ev := nextEvent(t, w)
			status, ok := ev.Object.(*metav1.Status)
			if ev.Type != watch.Error || !ok || status.Code != http.StatusGone {
				t.Fatalf("watch sent %s %+v, want ERROR 410", ev.Type, ev.Object)
			}
		})
	}
}
