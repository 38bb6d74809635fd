package watchcache_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
	"github.com/skiff-sh/skiff/internal/storage/watchcache"
)

// scenario is a sequence of writes and one watch; the same watch is opened on the etcd store and on
// the cache wrapped around it, and both must deliver exactly the same events.
type scenario struct {
	name string
	// setup writes before the watch starts and returns the watch's prefix and options.
	setup func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions)
	// writes runs after both watches started.
	writes func(t *testing.T, s storage.Interface, root string)
	// events is how many non-bookmark events the watch delivers.
	events int
}

func TestWatchMatchesStoreSemantics(t *testing.T) {
	scenarios := []scenario{
		{
			name: "rv empty: initial state then changes",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				mustCreate(t, s, root, makePod("a").obj())
				mustCreate(t, s, root, makePod("b").ns("other").obj())
				return root, storage.ListOptions{Recursive: true}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				mustCreate(t, s, root, makePod("c").obj())
				mustUpdate(t, s, root+"default/a", setLabel("app", "web"))
				mustDelete(t, s, root+"other/b")
			},
			events: 5,
		},
		{
			name: "rv 0: initial state then changes",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				mustCreate(t, s, root, makePod("a").obj())
				mustCreate(t, s, root, makePod("b").obj())
				return root, storage.ListOptions{Recursive: true, ResourceVersion: "0"}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				mustUpdate(t, s, root+"default/b", setLabel("app", "db"))
				mustCreate(t, s, root, makePod("c").obj())
			},
			events: 4,
		},
		{
			name: "exact rv: only later changes, including ones before the watch started",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				a := mustCreate(t, s, root, makePod("a").obj())
				mustUpdate(t, s, root+"default/a", setLabel("app", "web"))
				mustCreate(t, s, root, makePod("b").obj())
				return root, storage.ListOptions{Recursive: true, ResourceVersion: a.ResourceVersion}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				mustDelete(t, s, root+"default/a")
			},
			events: 3,
		},
		{
			name: "sendInitialEvents=false: changes from now",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				mustCreate(t, s, root, makePod("a").obj())
				return root, storage.ListOptions{Recursive: true, SendInitialEvents: ptr(false)}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				mustCreate(t, s, root, makePod("b").obj())
				mustDelete(t, s, root+"default/a")
			},
			events: 2,
		},
		{
			name: "sendInitialEvents=true from an exact rv: state not older than it, then changes",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				a := mustCreate(t, s, root, makePod("a").label("app", "web").obj())
				mustCreate(t, s, root, makePod("b").label("app", "web").obj())
				return root, storage.ListOptions{Recursive: true, ResourceVersion: a.ResourceVersion, SendInitialEvents: ptr(true),
					Predicate: selectLabels(t, "app=web")}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				mustUpdate(t, s, root+"default/a", setLabel("app", "db"))
			},
			events: 3,
		},
		{
			name: "label predicate: start and stop matching",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				mustCreate(t, s, root, makePod("a").obj())
				mustCreate(t, s, root, makePod("gone").label("app", "web").obj())
				return root, storage.ListOptions{Recursive: true, Predicate: selectLabels(t, "app=web")}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				key := root + "default/a"
				mustUpdate(t, s, key, setLabel("app", "web")) // starts matching: ADDED
				mustUpdate(t, s, key, setLabel("tier", "1"))  // still matching: MODIFIED
				mustUpdate(t, s, key, setLabel("app", "db"))  // stops matching: DELETED (last matching state)
				mustUpdate(t, s, key, setLabel("app", ""))    // matches on neither side: nothing
				mustDelete(t, s, key)                         // deleted while not matching: nothing
				mustCreate(t, s, root, makePod("a").label("app", "web").obj())
				mustDelete(t, s, root+"default/gone") // deleted while matching: DELETED
			},
			events: 6, // gone (initial), ADDED, MODIFIED, DELETED, ADDED, DELETED
		},
		{
			name: "field selector on spec.nodeName",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				mustCreate(t, s, root, makePod("a").obj())
				mustCreate(t, s, root, makePod("b").node("n1").obj())
				return root, storage.ListOptions{Recursive: true, Predicate: selectFields(t, "spec.nodeName=n1")}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				mustUpdate(t, s, root+"default/a", func(p *corev1.Pod) { p.Spec.NodeName = "n1" })
				mustUpdate(t, s, root+"default/b", setLabel("app", "x"))
				mustCreate(t, s, root, makePod("c").node("n2").obj())
			},
			events: 3,
		},
		{
			name: "namespace prefix excludes other namespaces",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				mustCreate(t, s, root, makePod("a").ns("ns1").obj())
				mustCreate(t, s, root, makePod("a").ns("ns10").obj())
				return root + "ns1/", storage.ListOptions{Recursive: true}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				mustCreate(t, s, root, makePod("b").ns("ns10").obj())
				mustCreate(t, s, root, makePod("b").ns("ns1").obj())
				mustDelete(t, s, root+"ns1/a")
			},
			events: 3,
		},
		{
			name: "single key: not its siblings",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				a := mustCreate(t, s, root, makePod("a").obj())
				return root + "default/a", storage.ListOptions{ResourceVersion: a.ResourceVersion}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				mustCreate(t, s, root, makePod("ab").obj())
				mustUpdate(t, s, root+"default/a", func(p *corev1.Pod) { p.Spec.NodeName = "n" })
				mustDelete(t, s, root+"default/a")
			},
			events: 2,
		},
		{
			name: "single key with rv 0: its current state first",
			setup: func(t *testing.T, s storage.Interface, root string) (string, storage.ListOptions) {
				mustCreate(t, s, root, makePod("a").obj())
				mustCreate(t, s, root, makePod("ab").obj())
				return root + "default/a", storage.ListOptions{ResourceVersion: "0"}
			},
			writes: func(t *testing.T, s storage.Interface, root string) {
				mustUpdate(t, s, root+"default/a", setLabel("app", "web"))
			},
			events: 2,
		},
	}
	store := newPodStore(t, env.client(t))
	for _, sc := range scenarios {
		for _, warm := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cache warm=%v", sc.name, warm), func(t *testing.T) {
				root := rootFor(t)
				counting := &countingStore{Interface: store}
				cache := newCache(t, counting, watchcache.Config{})
				if warm {
					// An earlier watch started the cache: the scenario's writes reach it as events.
					startWatch(t, cache, root, storage.ListOptions{Recursive: true})
				}
				prefix, opts := sc.setup(t, store, root)
				direct := startWatch(t, store, prefix, opts)
				cached := startWatch(t, cache, prefix, opts)
				sc.writes(t, store, root)
				want := collect(t, direct, sc.events)
				got := collect(t, cached, sc.events)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("cached watch delivered\n  %v\nthe store delivered\n  %v", got, want)
				}
				expectNoEvent(t, cached, 100*time.Millisecond)
				if n := counting.watches.Load(); n != 1 {
					t.Fatalf("underlying watches = %d, want 1 (everything served from the cache)", n)
				}
			})
		}
	}
}

func TestSendInitialEventsEndsWithAnnotatedBookmark(t *testing.T) {
	store := newPodStore(t, env.client(t))
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			root := rootFor(t)
			cache := newCache(t, store, watchcache.Config{})
			mustCreate(t, store, root, makePod("a").label("app", "web").obj())
			mustCreate(t, store, root, makePod("b").obj())
			last := mustCreate(t, store, root, makePod("c").label("app", "web").obj())
			w := startWatch(t, cache, root, storage.ListOptions{
				Recursive: true, ResourceVersion: rv, SendInitialEvents: ptr(true), ProgressNotify: true, Predicate: selectLabels(t, "app=web"),
			})
			got := []seen{summarize(t, nextEvent(t, w)), summarize(t, nextEvent(t, w))}
			if got[0].name != "a" || got[1].name != "c" || got[0].typ != watch.Added || got[1].typ != watch.Added {
				t.Fatalf("initial events = %v, want ADDED a, ADDED c", got)
			}
			ev := nextEvent(t, w)
			pod, _ := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Bookmark || pod == nil || pod.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				t.Fatalf("event after the initial ones = %s %+v, want the annotated BOOKMARK", ev.Type, ev.Object)
			}
			if rvOf(t, pod) < rvOf(t, last) || pod.Name != "" {
				t.Fatalf("bookmark = %+v, want only a resourceVersion >= %s", pod.ObjectMeta, last.ResourceVersion)
			}
			d := mustCreate(t, store, root, makePod("d").label("app", "web").obj())
			if got := summarize(t, nextNonBookmark(t, w)); got.name != "d" || got.rv != rvOf(t, d) {
				t.Fatalf("after the bookmark: %v, want ADDED d@%s", got, d.ResourceVersion)
			}
		})
	}
}

func TestOneUnderlyingWatchPerResource(t *testing.T) {
	store := newPodStore(t, env.client(t))
	counting := &countingStore{Interface: store}
	cache := newCache(t, counting, watchcache.Config{})
	root := rootFor(t)
	otherRoot := root[:len(root)-len("pods/")] + "services/"
	var watchers []watch.Interface
	for i := range 30 {
		prefix, opts := root, storage.ListOptions{Recursive: true}
		switch i % 3 {
		case 1:
			prefix = root + "ns0/"
		case 2:
			prefix, opts = root+"ns0/p", storage.ListOptions{}
		}
		watchers = append(watchers, startWatch(t, cache, prefix, opts))
	}
	startWatch(t, cache, otherRoot, storage.ListOptions{Recursive: true})
	p := mustCreate(t, store, root, makePod("p").ns("ns0").obj())
	for i, w := range watchers {
		if got := summarize(t, nextNonBookmark(t, w)); got.name != "p" || got.rv != rvOf(t, p) {
			t.Fatalf("watcher %d got %v, want ADDED p", i, got)
		}
	}
	if n := counting.watches.Load(); n != 2 {
		t.Fatalf("underlying watches = %d, want 2 (one per resource root)", n)
	}
}

func TestObjectsHandedOutAreCopies(t *testing.T) {
	store := newPodStore(t, env.client(t))
	cache := newCache(t, store, watchcache.Config{})
	root := rootFor(t)
	first := startWatch(t, cache, root, storage.ListOptions{Recursive: true, SendInitialEvents: ptr(false)})
	second := startWatch(t, cache, root, storage.ListOptions{Recursive: true, SendInitialEvents: ptr(false)})
	mustCreate(t, store, root, makePod("a").label("app", "web").obj())
	ev := nextNonBookmark(t, first)
	pod := ev.Object.(*corev1.Pod)
	// What the API layer's encoders do to an object, and worse.
	pod.Kind, pod.APIVersion = "Mutated", "mutated/v1"
	pod.Labels["app"] = "changed"
	other := nextNonBookmark(t, second).Object.(*corev1.Pod)
	if other.Kind == "Mutated" || other.Labels["app"] != "web" {
		t.Fatalf("second watcher saw the first one's mutation: %+v", other.ObjectMeta)
	}
	third := startWatch(t, cache, root, storage.ListOptions{Recursive: true, ResourceVersion: "0"})
	if fromState := nextEvent(t, third).Object.(*corev1.Pod); fromState.Labels["app"] != "web" {
		t.Fatalf("cached state was mutated through a delivered object: %+v", fromState.ObjectMeta)
	}
}
