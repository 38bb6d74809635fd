package watchcache

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
)

// resultBuffer lets the API layer see that more events are ready, so it flushes once per burst
// rather than once per event (as with the etcd store's watches).
const resultBuffer = 100

// cacheWatcher is one watch served from a resource cache. The dispatcher feeds input; the watcher's
// own goroutine filters, copies and delivers, so a slow consumer only ever blocks itself.
type cacheWatcher struct {
	rc             *resourceCache
	filterKey      string // the key (single-object watch) or prefix ending in "/"
	recursive      bool
	predicate      storage.Predicate
	progressNotify bool

	// Set before the watcher runs.
	initial       []runtime.Object
	initialShared bool // initial objects belong to the cache and must be copied
	// shared hands out the cache's own objects uncopied (WatchShared's in-process readers).
	shared      bool
	endBookmark bool
	backlog     []*event
	// position is the revision up to which the watcher has seen every change.
	position int64

	input  chan *event
	result chan watch.Event
	ctx    context.Context
	cancel context.CancelFunc
	// sentSinceTick tells whether anything went to the client since the last bookmark tick.
	sentSinceTick bool
	// share is set by ShareObjects: changes are sent as the cache's objects (watchshare.go).
	share atomic.Bool
}

var _ watch.Interface = (*cacheWatcher)(nil)

func newWatcher(ctx context.Context, rc *resourceCache, prefix string, opts storage.ListOptions) *cacheWatcher {
	wctx, cancel := context.WithCancel(ctx)
	filterKey := prefix
	if opts.Recursive {
		filterKey = ensureSlash(prefix)
	}
	return &cacheWatcher{
		rc:             rc,
		filterKey:      filterKey,
		recursive:      opts.Recursive,
		predicate:      opts.Predicate,
		progressNotify: opts.ProgressNotify,
		input:          make(chan *event, rc.cache.cfg.WatcherBuffer),
		result:         make(chan watch.Event, min(rc.cache.cfg.WatcherBuffer, resultBuffer)),
		ctx:            wctx,
		cancel:         cancel,
	}
}

// Stop ends the watch; ResultChan is closed once the watcher's goroutine has exited.
func (w *cacheWatcher) Stop() { w.cancel() }

func (w *cacheWatcher) ResultChan() <-chan watch.Event { return w.result }

func (w *cacheWatcher) run() {
	defer close(w.result)
	defer w.rc.unregister(w)
	defer w.cancel()
	if !w.sendInitial() {
		return
	}
	for _, e := range w.backlog {
		if !w.handle(e) {
			return
		}
	}
	w.backlog = nil
	for {
		select {
		case <-w.ctx.Done():
			return
		case e, ok := <-w.input:
			if !ok {
				return
			}
			if !w.handle(e) {
				return
			}
		}
	}
}

func (w *cacheWatcher) sendInitial() bool {
	for _, obj := range w.initial {
		if w.initialShared {
			matches, err := w.predicate.Matches(obj)
			if err != nil {
				w.sendError(apierrors.NewInternalError(err))
				return false
			}
			if !matches {
				continue
			}
			obj = w.own(obj)
		}
		if !w.send(watch.Event{Type: watch.Added, Object: obj}) {
			return false
		}
	}
	w.initial = nil
	if w.endBookmark {
		bookmark, err := w.bookmark(w.position)
		if err != nil {
			w.sendError(apierrors.NewInternalError(err))
			return false
		}
		accessor, _ := meta.Accessor(bookmark)
		accessor.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		if !w.send(watch.Event{Type: watch.Bookmark, Object: bookmark}) {
			return false
		}
	}
	return true
}

// handle delivers what one event means to this watcher; false ends the watch.
func (w *cacheWatcher) handle(e *event) bool {
	if e.typ == watch.Bookmark {
		if !w.progressNotify {
			return true
		}
		if w.sentSinceTick {
			w.sentSinceTick = false
			return true
		}
		w.position = max(w.position, e.rev)
		bookmark, err := w.bookmark(w.position)
		if err != nil {
			w.sendError(apierrors.NewInternalError(err))
			return false
		}
		if !w.send(watch.Event{Type: watch.Bookmark, Object: bookmark}) {
			return false
		}
		// The bookmark itself is not activity: an idle watcher gets one every tick.
		w.sentSinceTick = false
		return true
	}
	if e.rev <= w.position {
		return true
	}
	w.position = e.rev
	if !w.inRange(e.key) {
		return true
	}
	out, err := w.transform(e)
	if err != nil {
		w.sendError(apierrors.NewInternalError(err))
		return false
	}
	if out == nil {
		return true
	}
	return w.send(*out)
}

func (w *cacheWatcher) inRange(key string) bool {
	if w.recursive {
		return strings.HasPrefix(key, w.filterKey)
	}
	return key == w.filterKey
}

// transform computes the watcher's event: objects that start matching its predicate are ADDED,
// those that stop matching are DELETED with their last matching state.
func (w *cacheWatcher) transform(e *event) (*watch.Event, error) {
	curMatches, err := w.predicate.Matches(e.obj)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", e.key, err)
	}
	switch e.typ {
	case watch.Added, watch.Deleted:
		if !curMatches {
			return nil, nil
		}
		return &watch.Event{Type: e.typ, Object: w.current(e)}, nil
	}
	oldMatches, err := w.predicate.Matches(e.prev)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", e.key, err)
	}
	switch {
	case curMatches && oldMatches:
		return &watch.Event{Type: watch.Modified, Object: w.current(e)}, nil
	case curMatches:
		return &watch.Event{Type: watch.Added, Object: w.current(e)}, nil
	case oldMatches:
		return &watch.Event{Type: watch.Deleted, Object: w.previous(e)}, nil
	}
	return nil, nil
}

func (w *cacheWatcher) bookmark(rev int64) (runtime.Object, error) {
	obj := w.rc.cache.cfg.NewFunc()
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("bookmark: %w", err)
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

func (w *cacheWatcher) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		w.sentSinceTick = true
		return true
	case <-w.ctx.Done():
		return false
	}
}

func (w *cacheWatcher) sendError(err apierrors.APIStatus) {
	status := err.Status()
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	w.send(watch.Event{Type: watch.Error, Object: &status})
}
