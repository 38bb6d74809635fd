package watchcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
)

// event is one change under a resource root, shared by every watcher: nothing in it is mutated after
// it is published.
type event struct {
	// typ is Added, Modified or Deleted for changes; Bookmark for a bookmark tick.
	typ watch.EventType
	key string
	rev int64
	// obj is the new state (Added, Modified) or the last state with rev as its resourceVersion
	// (Deleted).
	obj runtime.Object
	// prev is the state before a Modified or Deleted change (as stored, with its own
	// resourceVersion): lists at an older revision are rebuilt from it.
	prev runtime.Object

	// size estimates the bytes obj holds (see objectSize), for the history's byte bound.
	size int64

	prevOnce  sync.Once
	prevAtRev runtime.Object

	// memo are the event's objects with memoized encodings, made when a watcher that shares
	// objects sends them (watchshare.go).
	memo eventMemo
}

// previousAtRevision is the state before a modification stamped with the modification's revision:
// what a watcher whose predicate the object stops matching receives as DELETED.
func (e *event) previousAtRevision() runtime.Object {
	e.prevOnce.Do(func() {
		obj := e.prev.DeepCopyObject()
		if accessor, err := meta.Accessor(obj); err == nil {
			accessor.SetResourceVersion(strconv.FormatInt(e.rev, 10))
		}
		e.prevAtRev = obj
	})
	return e.prevAtRev
}

// history is a ring buffer of the most recent events, bounded by count (its buffer's length) and
// by the estimated bytes of the objects the events hold: a burst of large objects would otherwise
// pin count x size of memory long after it ended. The newest event is always kept.
type history struct {
	buf      []*event
	start    int // index of the oldest event
	n        int
	bytes    int64
	maxBytes int64 // 0: bounded by count only
}

// push appends e, evicting the oldest events over the bounds; it returns the newest evicted one
// (nil if none): every change up to its revision has left the history.
func (h *history) push(e *event) (evicted *event) {
	if h.n == len(h.buf) {
		evicted = h.pop()
	}
	h.buf[(h.start+h.n)%len(h.buf)] = e
	h.n++
	h.bytes += e.size
	for h.maxBytes > 0 && h.bytes > h.maxBytes && h.n > 1 {
		evicted = h.pop()
	}
	return evicted
}

// pop removes the oldest event.
func (h *history) pop() *event {
	e := h.buf[h.start]
	e.memo.evict()
	h.buf[h.start] = nil
	h.start = (h.start + 1) % len(h.buf)
	h.n--
	h.bytes -= e.size
	return e
}

func (h *history) at(i int) *event { return h.buf[(h.start+i)%len(h.buf)] }

// after returns, oldest first, the events with a revision greater than rev.
func (h *history) after(rev int64) []*event {
	lo, hi := 0, h.n
	for lo < hi { // binary search: revisions are non-decreasing
		mid := (lo + hi) / 2
		if h.at(mid).rev > rev {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	out := make([]*event, 0, h.n-lo)
	for i := lo; i < h.n; i++ {
		out = append(out, h.at(i))
	}
	return out
}

// resourceCache is the cache of one resource root: its state, history and watchers, fed by one
// underlying watch.
type resourceCache struct {
	cache *Cache
	root  string
	// ready is closed once the initial list and the underlying watch are set up (initErr tells how).
	ready   chan struct{}
	initErr error
	// done is closed when the dispatch loop has exited (or initialisation failed).
	done chan struct{}

	mu    sync.Mutex
	state map[string]runtime.Object
	hist  history
	// rev is the revision the cache is current to: every change up to it has been dispatched.
	rev int64
	// historyFrom is the revision after which every change is in the history: watches from an older
	// revision cannot be served from memory.
	historyFrom int64
	watchers    map[*cacheWatcher]struct{}
	failed      bool

	// lists is what serving lists from memory keeps (list.go).
	lists listState
}

func newResourceCache(c *Cache, root string) *resourceCache {
	return &resourceCache{
		cache:    c,
		root:     root,
		ready:    make(chan struct{}),
		done:     make(chan struct{}),
		state:    map[string]runtime.Object{},
		hist:     history{buf: make([]*event, c.cfg.HistorySize), maxBytes: c.cfg.HistoryBytes},
		watchers: map[*cacheWatcher]struct{}{},
		lists:    newListState(c.cfg.EncodedBytes),
	}
}

// start fills the state with a list (at revision requested when etcd still has it, otherwise the
// latest), opens the underlying watch from the list's revision and runs the dispatch loop.
func (rc *resourceCache) start(requested int64) {
	c := rc.cache
	underlying, err := rc.init(requested)
	if err != nil {
		rc.initErr = fmt.Errorf("watch cache for %s: %w", rc.root, err)
		rc.failed = true
		c.forget(rc)
		close(rc.ready)
		close(rc.done)
		return
	}
	close(rc.ready)
	defer close(rc.done)
	rc.dispatchLoop(underlying)
}

func (rc *resourceCache) init(requested int64) (watch.Interface, error) {
	c := rc.cache
	ctx, cancel := context.WithTimeout(c.base, initTimeout)
	defer cancel()
	var objs []runtime.Object
	var rev int64
	err := errors.New("no exact revision")
	if requested > 0 {
		objs, rev, err = c.list(ctx, rc.root, storage.ListOptions{
			ResourceVersion: strconv.FormatInt(requested, 10), ResourceVersionMatch: string(metav1.ResourceVersionMatchExact), Recursive: true,
		})
	}
	if err != nil {
		if objs, rev, err = c.list(ctx, rc.root, storage.ListOptions{Recursive: true}); err != nil {
			return nil, err
		}
	}
	for _, obj := range objs {
		key, _, err := objectKey(rc.root, obj)
		if err != nil {
			return nil, err
		}
		c.fields.internObject(obj)
		rc.state[key] = obj
	}
	rc.rev, rc.historyFrom = rev, rev
	rc.lists.lastChange = rev
	c.cfg.Metrics.initialized(rc.root)
	// The underlying watch outlives this request: it belongs to the cache.
	return c.store.Watch(c.base, rc.root, storage.ListOptions{
		ResourceVersion: strconv.FormatInt(rev, 10), Recursive: true, ProgressNotify: true,
	})
}

func (rc *resourceCache) dispatchLoop(underlying watch.Interface) {
	c := rc.cache
	defer underlying.Stop()
	ticker := c.cfg.Clock.NewTicker(c.cfg.BookmarkInterval)
	defer ticker.Stop()
	for {
		select {
		case <-c.base.Done():
			rc.fail(nil)
			return
		case ev, ok := <-underlying.ResultChan():
			if !ok {
				rc.fail(errors.New("underlying watch closed"))
				return
			}
			if err := rc.process(ev); err != nil {
				rc.fail(err)
				return
			}
		case <-ticker.C():
			rc.tick()
		}
	}
}

// process applies one underlying event to the state and history and hands it to the watchers.
func (rc *resourceCache) process(ev watch.Event) error {
	c := rc.cache
	switch ev.Type {
	case watch.Error:
		if status, ok := ev.Object.(*metav1.Status); ok {
			return fmt.Errorf("underlying watch: %s (code %d)", status.Message, status.Code)
		}
		return fmt.Errorf("underlying watch: error event %v", ev.Object)
	case watch.Bookmark:
		accessor, err := meta.Accessor(ev.Object)
		if err != nil {
			return fmt.Errorf("bookmark: %w", err)
		}
		rev, err := parseRevision(accessor.GetResourceVersion())
		if err != nil {
			return fmt.Errorf("bookmark: %w", err)
		}
		rc.mu.Lock()
		rc.advanceLocked(rev)
		rc.mu.Unlock()
		return nil
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return fmt.Errorf("underlying watch: unexpected event type %q", ev.Type)
	}
	key, rev, err := objectKey(rc.root, ev.Object)
	if err != nil {
		return fmt.Errorf("underlying watch event: %w", err)
	}
	c.cfg.Metrics.eventReceived(rc.root)
	c.fields.internObject(ev.Object)
	rc.mu.Lock()
	prev, existed := rc.state[key]
	e := &event{typ: ev.Type, key: key, rev: rev, obj: ev.Object, size: objectSize(ev.Object)}
	rc.lists.changedLocked(key, rev, ev.Type == watch.Deleted || !existed)
	switch {
	case ev.Type == watch.Deleted:
		e.prev = prev
		delete(rc.state, key)
	case existed:
		e.typ, e.prev = watch.Modified, prev
		rc.state[key] = ev.Object
	default:
		e.typ = watch.Added
		rc.state[key] = ev.Object
	}
	if evicted := rc.hist.push(e); evicted != nil {
		rc.historyFrom = evicted.rev
	}
	rc.advanceLocked(rev)
	var blocked []*cacheWatcher
	for w := range rc.watchers {
		select {
		case w.input <- e:
		default:
			blocked = append(blocked, w)
		}
	}
	rc.mu.Unlock()
	if len(blocked) > 0 {
		rc.waitForSlowWatchers(e, blocked)
	}
	return nil
}

// waitForSlowWatchers gives watchers whose buffer is full, together, SlowWatcherTimeout to make room
// for e, and closes those that do not. It runs without the lock so new watches can register meanwhile
// (they find e in the history).
func (rc *resourceCache) waitForSlowWatchers(e *event, blocked []*cacheWatcher) {
	cfg := rc.cache.cfg
	var slow []*cacheWatcher
	if cfg.SlowWatcherTimeout < 0 {
		slow = blocked
	} else {
		timer := cfg.Clock.NewTimer(cfg.SlowWatcherTimeout)
		defer timer.Stop()
		expired := false
		for _, w := range blocked {
			if expired {
				select {
				case w.input <- e:
				case <-w.ctx.Done():
				default:
					slow = append(slow, w)
				}
				continue
			}
			select {
			case w.input <- e:
			case <-w.ctx.Done():
			case <-timer.C():
				expired = true
				slow = append(slow, w)
			}
		}
	}
	if len(slow) == 0 {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	closed := 0
	for _, w := range slow {
		if rc.terminateLocked(w) {
			closed++
		}
	}
	rc.cache.cfg.Metrics.watchersTerminated(rc.root, closed)
	rc.cache.cfg.Logger.Info("closed watchers that fell behind", "resource", rc.root, "count", closed, "revision", e.rev)
}

// tick offers every watcher that allows bookmarks a bookmark at the cache's revision; a watcher sends
// it only when it has sent nothing since the previous tick. A full buffer just skips the bookmark.
func (rc *resourceCache) tick() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.watchers) == 0 {
		return
	}
	e := &event{typ: watch.Bookmark, rev: rc.rev}
	for w := range rc.watchers {
		if !w.progressNotify {
			continue
		}
		select {
		case w.input <- e:
		default:
		}
	}
}

// register adds w to the watchers with every change after rev still to deliver. False when the
// history does not reach back to rev or the cache has failed.
func (rc *resourceCache) register(w *cacheWatcher, rev int64) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.failed || rev < rc.historyFrom {
		return false
	}
	w.backlog = rc.hist.after(rev)
	w.position = rev
	rc.addLocked(w)
	return true
}

// registerFromState adds w with the cache's current objects in w's key range as initial events.
func (rc *resourceCache) registerFromState(w *cacheWatcher) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.failed {
		return false
	}
	var keys []string
	if w.recursive {
		for key := range rc.state {
			if strings.HasPrefix(key, w.filterKey) {
				keys = append(keys, key)
			}
		}
		slices.Sort(keys)
	} else if _, ok := rc.state[w.filterKey]; ok {
		keys = []string{w.filterKey}
	}
	w.initial = make([]runtime.Object, 0, len(keys))
	for _, key := range keys {
		w.initial = append(w.initial, rc.state[key])
	}
	w.initialShared = true
	w.position = rc.rev
	rc.addLocked(w)
	return true
}

func (rc *resourceCache) addLocked(w *cacheWatcher) {
	rc.watchers[w] = struct{}{}
	rc.cache.cfg.Metrics.watcherAdded(rc.root)
}

// unregister removes a watcher that stopped by itself.
func (rc *resourceCache) unregister(w *cacheWatcher) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, ok := rc.watchers[w]; ok {
		delete(rc.watchers, w)
		rc.cache.cfg.Metrics.watcherRemoved(rc.root)
	}
}

// terminateLocked closes a watcher's input: it delivers what is buffered and ends. Only the cache
// closes inputs, and only for registered watchers, so an input is closed at most once. False when w
// had already gone.
func (rc *resourceCache) terminateLocked(w *cacheWatcher) bool {
	if _, ok := rc.watchers[w]; !ok {
		return false
	}
	delete(rc.watchers, w)
	rc.cache.cfg.Metrics.watcherRemoved(rc.root)
	close(w.input)
	return true
}

// fail ends every watcher (they deliver what they have and close, so clients resume from their last
// resourceVersion) and drops this cache, so the next watch starts a new one.
func (rc *resourceCache) fail(err error) {
	rc.mu.Lock()
	rc.failed = true
	rc.lists.dropAllLocked()
	rc.lists.wakeLocked()
	n := len(rc.watchers)
	for w := range rc.watchers {
		rc.terminateLocked(w)
	}
	rc.mu.Unlock()
	if err != nil {
		rc.cache.cfg.Logger.Warn("watch cache restarting", "resource", rc.root, "watchers", n, "err", err)
	}
	rc.cache.forget(rc)
}
