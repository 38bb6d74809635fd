package schedtest

import (
	"sync"

	"github.com/google/uuid"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// WatchHub replaces the fake clientset's watches with unbounded ones. The
// fake tracker's watchers hold 100 events and panic when full, which bursts
// of thousands of writes (benchmarks, churn tests) hit on a busy machine.
type WatchHub struct {
	tracker  clienttesting.ObjectTracker
	mu       sync.Mutex
	watchers map[*hubWatch]struct{}
}

// InstallBufferedWatches routes cs's writes and watches through a WatchHub.
// Like the API server, it gives created objects a UID when they have none.
// Install it before InstallBindingReactor and pass the hub to it.
func InstallBufferedWatches(cs *fake.Clientset) *WatchHub {
	hub := &WatchHub{tracker: cs.Tracker(), watchers: map[*hubWatch]struct{}{}}
	react := clienttesting.ObjectReaction(cs.Tracker())
	cs.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		verb := a.GetVerb()
		if verb != "create" && verb != "update" && verb != "patch" && verb != "delete" {
			return false, nil, nil
		}
		if a.GetSubresource() == "binding" {
			return false, nil, nil
		}
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetSubresource() == "" {
			if m, err := meta.Accessor(c.GetObject()); err == nil && m.GetUID() == "" {
				m.SetUID(types.UID(uuid.NewString()))
			}
		}
		var before runtime.Object
		if d, ok := a.(clienttesting.DeleteAction); ok {
			before, _ = cs.Tracker().Get(a.GetResource(), a.GetNamespace(), d.GetName())
		}
		handled, obj, err := react(a)
		if err != nil || !handled {
			return handled, obj, err
		}
		switch verb {
		case "create":
			if a.GetSubresource() == "" {
				hub.Emit(a.GetResource(), watch.Added, obj)
			}
		case "update", "patch":
			hub.Emit(a.GetResource(), watch.Modified, obj)
		case "delete":
			if before != nil {
				hub.Emit(a.GetResource(), watch.Deleted, before)
			}
		}
		return handled, obj, err
	})
	cs.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		return true, hub.watch(a.GetResource(), a.GetNamespace()), nil
	})
	return hub
}

// Emit delivers an event to every matching watcher without blocking.
func (h *WatchHub) Emit(gvr schema.GroupVersionResource, typ watch.EventType, obj runtime.Object) {
	if obj == nil {
		return
	}
	ns := ""
	if m, err := meta.Accessor(obj); err == nil {
		ns = m.GetNamespace()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers {
		if w.gvr == gvr && (w.ns == "" || w.ns == ns) {
			w.push(watch.Event{Type: typ, Object: obj.DeepCopyObject()})
		}
	}
}

func (h *WatchHub) watch(gvr schema.GroupVersionResource, ns string) watch.Interface {
	w := &hubWatch{hub: h, gvr: gvr, ns: ns, out: make(chan watch.Event), stop: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	h.mu.Lock()
	h.watchers[w] = struct{}{}
	h.mu.Unlock()
	go w.deliver()
	return w
}

type hubWatch struct {
	hub      *WatchHub
	gvr      schema.GroupVersionResource
	ns       string
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once

	mu      sync.Mutex
	cond    *sync.Cond
	pending []watch.Event
	stopped bool
}

func (w *hubWatch) push(ev watch.Event) {
	w.mu.Lock()
	w.pending = append(w.pending, ev)
	w.cond.Signal()
	w.mu.Unlock()
}

func (w *hubWatch) deliver() {
	defer close(w.out)
	for {
		w.mu.Lock()
		for len(w.pending) == 0 && !w.stopped {
			w.cond.Wait()
		}
		if w.stopped {
			w.mu.Unlock()
			return
		}
		ev := w.pending[0]
		w.pending = w.pending[1:]
		w.mu.Unlock()
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

func (w *hubWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *hubWatch) Stop() {
	w.stopOnce.Do(func() {
		w.hub.mu.Lock()
		delete(w.hub.watchers, w)
		w.hub.mu.Unlock()
		w.mu.Lock()
		w.stopped = true
		w.cond.Signal()
		w.mu.Unlock()
		close(w.stop)
	})
}
