package watchcache

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
)

// eventMemo holds an event's objects with memoized encodings, shared by every watcher that sends
// them; evicting the event from the history gives their bytes back to the budget.
type eventMemo struct {
	mu       sync.Mutex
	evicted  bool
	current  *sharedObject
	previous *sharedObject
}

func (m *eventMemo) get(slot **sharedObject, obj runtime.Object, budget *encodedBudget) *sharedObject {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *slot == nil {
		if m.evicted {
			budget = nil // nothing would give the bytes back
		}
		*slot = &sharedObject{obj: obj, budget: budget}
	}
	return *slot
}

func (m *eventMemo) evict() {
	m.mu.Lock()
	m.evicted = true
	current, previous := m.current, m.previous
	m.mu.Unlock()
	for _, s := range []*sharedObject{current, previous} {
		if s != nil {
			s.drop()
		}
	}
}

// ShareObjects implements storage.ObjectSharer: from now on, changes go out as the cache's own
// objects with encodings memoized per event, not as a copy per watcher. Initial events stay copies.
func (w *cacheWatcher) ShareObjects() { w.share.Store(true) }

var _ storage.ObjectSharer = (*cacheWatcher)(nil)

// current is e's object as this watcher sends it.
func (w *cacheWatcher) current(e *event) runtime.Object {
	if w.shared {
		// An in-process reader (WatchShared) takes the cache's own object.
		return e.obj
	}
	if !w.share.Load() {
		return e.obj.DeepCopyObject()
	}
	return &storage.SharedEventObject{SharedObject: e.memo.get(&e.memo.current, e.obj, w.rc.lists.budget)}
}

// previous is the last state of an object that stopped matching, as this watcher sends it.
func (w *cacheWatcher) previous(e *event) runtime.Object {
	if w.shared {
		return e.previousAtRevision()
	}
	if !w.share.Load() {
		return e.previousAtRevision().DeepCopyObject()
	}
	return &storage.SharedEventObject{SharedObject: e.memo.get(&e.memo.previous, e.previousAtRevision(), w.rc.lists.budget)}
}
