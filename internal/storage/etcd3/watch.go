package etcd3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
)

// InitialEventsAnnotationKey marks the bookmark that ends the initial events of a watch with
// sendInitialEvents=true.
const InitialEventsAnnotationKey = metav1.InitialEventsAnnotationKey

// resultBuffer decouples the etcd watch from a slow consumer for short bursts.
const resultBuffer = 100

// Watch implements storage.Interface.
func (s *Store) Watch(ctx context.Context, prefix string, opts storage.ListOptions) (watch.Interface, error) {
	key := prefix
	if opts.Recursive {
		key = ensureSlash(prefix)
	}
	requested := int64(0)
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		rev, err := parseResourceVersion(opts.ResourceVersion)
		if err != nil {
			return nil, err
		}
		requested = rev
	}
	sendInitial := requested == 0
	if opts.SendInitialEvents != nil {
		sendInitial = *opts.SendInitialEvents
	}
	endBookmark := opts.SendInitialEvents != nil && *opts.SendInitialEvents

	var initial []runtime.Object
	startRev := requested // events after this revision
	if sendInitial {
		objs, rev, err := s.initialState(ctx, key, opts, requested)
		if err != nil {
			return nil, err
		}
		initial, startRev = objs, rev
	} else if requested == 0 {
		rev, err := s.CurrentRevision(ctx)
		if err != nil {
			return nil, err
		}
		startRev = rev
	}

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	w := &watcher{
		store:       s,
		key:         key,
		opts:        opts,
		requested:   startRev,
		result:      make(chan watch.Event, resultBuffer),
		cancel:      cancel,
		initial:     initial,
		endBookmark: endBookmark,
	}
	watchOpts := []clientv3.OpOption{clientv3.WithRev(startRev + 1), clientv3.WithPrevKV()}
	if opts.Recursive {
		watchOpts = append(watchOpts, clientv3.WithPrefix())
	}
	if opts.ProgressNotify {
		watchOpts = append(watchOpts, clientv3.WithProgressNotify())
	}
	events := s.client.Watch(wctx, key, watchOpts...)
	go w.run(wctx, events)
	return w, nil
}

// compactedAfter says whether etcd has compacted the revision after rev, the first a watch from
// rev delivers: a read there fails as compacted. One beyond the store's revision (a watch from the
// current revision) is still to come, not compacted.
func (s *Store) compactedAfter(ctx context.Context, key string, rev int64) (bool, error) {
	_, err := s.client.Get(ctx, key, clientv3.WithRev(rev+1), clientv3.WithCountOnly())
	switch {
	case err == nil, errors.Is(err, rpctypes.ErrFutureRev):
		return false, nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return true, nil
	default:
		return false, err
	}
}

// initialState lists what a watch starts with and the revision it was read at.
func (s *Store) initialState(ctx context.Context, key string, opts storage.ListOptions, minRev int64) ([]runtime.Object, int64, error) {
	list := s.newListFunc()
	listOpts := storage.ListOptions{Predicate: storage.Predicate{
		Label: opts.Predicate.Label, Field: opts.Predicate.Field, Attrs: opts.Predicate.Attrs,
	}, Recursive: opts.Recursive}
	if minRev > 0 {
		listOpts.ResourceVersion = strconv.FormatInt(minRev, 10)
		listOpts.ResourceVersionMatch = string(metav1.ResourceVersionMatchNotOlderThan)
	}
	if err := s.List(ctx, key, listOpts, list); err != nil {
		if se, ok := err.(*storage.Error); ok {
			se.Op = storage.OpWatch
		}
		return nil, 0, err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, 0, fmt.Errorf("watch %s: %w", key, err)
	}
	listAccessor, err := meta.ListAccessor(list)
	if err != nil {
		return nil, 0, fmt.Errorf("watch %s: %w", key, err)
	}
	rev, err := strconv.ParseInt(listAccessor.GetResourceVersion(), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("watch %s: list revision: %w", key, err)
	}
	return objs, rev, nil
}

type watcher struct {
	store       *Store
	key         string
	opts        storage.ListOptions
	requested   int64
	result      chan watch.Event
	cancel      context.CancelFunc
	initial     []runtime.Object
	endBookmark bool
	// confirmed: etcd serves this watch from where it asked, known from an event it delivered or
	// from a read at its first revision. Until then a progress notification is no bookmark.
	confirmed bool
}

var _ watch.Interface = (*watcher)(nil)

// Stop ends the watch; ResultChan is closed once the watch goroutine has exited.
func (w *watcher) Stop() {
	w.cancel()
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

func (w *watcher) run(ctx context.Context, events clientv3.WatchChan) {
	defer close(w.result)
	defer w.cancel()
	for _, obj := range w.initial {
		if !w.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
			return
		}
	}
	w.initial = nil
	if w.endBookmark {
		bookmark, err := w.store.bookmarkObject(w.requested)
		if err != nil {
			w.sendError(ctx, apierrors.NewInternalError(err))
			return
		}
		accessor, _ := meta.Accessor(bookmark)
		accessor.SetAnnotations(map[string]string{InitialEventsAnnotationKey: "true"})
		if !w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bookmark}) {
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case resp, ok := <-events:
			if !ok {
				return
			}
			if !w.handle(ctx, resp) {
				return
			}
		}
	}
}

// handle turns one etcd watch response into events; false ends the watch.
func (w *watcher) handle(ctx context.Context, resp clientv3.WatchResponse) bool {
	if resp.CompactRevision != 0 {
		w.sendError(ctx, apierrors.NewResourceExpired(
			fmt.Sprintf("too old resource version: %d (%d)", w.requested, resp.CompactRevision)))
		return false
	}
	if err := resp.Err(); err != nil {
		if ctx.Err() != nil {
			return false
		}
		w.sendError(ctx, apierrors.NewInternalError(fmt.Errorf("watch %s: %w", w.key, err)))
		return false
	}
	if len(resp.Events) > 0 {
		w.confirmed = true
	}
	if resp.IsProgressNotify() {
		if !w.opts.ProgressNotify || !w.store.progress.Supported(ctx) {
			// An etcd whose notifications may run ahead of its events: a bookmark at their
			// revision could skip events still to come, so none is sent.
			return true
		}
		if !w.confirmed {
			// A progress notification reached a watch whose start etcd had compacted, before the
			// compaction's answer (seen in 2 of 212 restores from a snapshot, by the robustness
			// suite: a bookmark past every revision the watch never delivered, then 410). A watch
			// proves its start once, by reading there.
			compacted, err := w.store.compactedAfter(ctx, w.key, w.requested)
			if err != nil {
				w.sendError(ctx, apierrors.NewInternalError(fmt.Errorf("watch %s: %w", w.key, err)))
				return false
			}
			if compacted {
				w.sendError(ctx, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (compacted)", w.requested)))
				return false
			}
			w.confirmed = true
		}
		bookmark, err := w.store.bookmarkObject(resp.Header.Revision)
		if err != nil {
			w.sendError(ctx, apierrors.NewInternalError(err))
			return false
		}
		return w.send(ctx, watch.Event{Type: watch.Bookmark, Object: bookmark})
	}
	for _, ev := range resp.Events {
		if !ev.IsCreate() && ev.PrevKv == nil {
			// etcd sends the previous state of a change only while it still has it: a watch
			// behind a compaction gets the change alone. Without it a deletion has no object and
			// a change cannot say what it replaced or whether it leaves a selection, and dropping
			// such a deletion left a watch cache serving a deleted object (the robustness suite's
			// ha-compact). The watcher must relist, as from any compacted revision.
			w.sendError(ctx, apierrors.NewResourceExpired(fmt.Sprintf(
				"too old resource version: %d (the state %s had before revision %d is compacted)",
				w.requested, ev.Kv.Key, ev.Kv.ModRevision)))
			return false
		}
		event, err := w.transform(ev)
		if err != nil {
			w.sendError(ctx, apierrors.NewInternalError(err))
			return false
		}
		if event == nil {
			continue
		}
		if !w.send(ctx, *event) {
			return false
		}
	}
	return true
}

// transform computes the Kubernetes event for one etcd event: objects that start matching the
// predicate are ADDED, those that stop matching are DELETED (with their last matching state).
func (w *watcher) transform(ev *clientv3.Event) (*watch.Event, error) {
	key := string(ev.Kv.Key)
	rev := ev.Kv.ModRevision
	var cur, old runtime.Object
	if ev.Type == clientv3.EventTypePut {
		cur = w.store.newFunc()
		if err := w.store.decode(ev.Kv.Value, cur, rev, key); err != nil {
			return nil, err
		}
	}
	hadOld := ev.PrevKv != nil && len(ev.PrevKv.Value) > 0
	// The previous state is needed for a deletion (it is the event's object) and to tell
	// whether a change leaves a selection. A watch that selects everything (the watch cache's)
	// only needs to know there was one: decoding it was a third of the watch's work.
	if hadOld && (ev.Type == clientv3.EventTypeDelete || !w.opts.Predicate.Empty()) {
		old = w.store.newFunc()
		// The previous state is sent with the revision at which it stopped being current.
		if err := w.store.decode(ev.PrevKv.Value, old, rev, key); err != nil {
			return nil, err
		}
	}
	curMatches, err := w.matches(cur)
	if err != nil {
		return nil, err
	}
	oldMatches := hadOld && old == nil // not decoded: selected like everything else
	if old != nil {
		if oldMatches, err = w.matches(old); err != nil {
			return nil, err
		}
	}
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if !oldMatches || old == nil {
			return nil, nil
		}
		return &watch.Event{Type: watch.Deleted, Object: old}, nil
	case !hadOld:
		if !curMatches {
			return nil, nil
		}
		return &watch.Event{Type: watch.Added, Object: cur}, nil
	case curMatches && oldMatches:
		return &watch.Event{Type: watch.Modified, Object: cur}, nil
	case curMatches:
		return &watch.Event{Type: watch.Added, Object: cur}, nil
	case oldMatches:
		return &watch.Event{Type: watch.Deleted, Object: old}, nil
	}
	return nil, nil
}

func (w *watcher) matches(obj runtime.Object) (bool, error) {
	if obj == nil {
		return false, nil
	}
	return w.opts.Predicate.Matches(obj)
}

func (w *watcher) send(ctx context.Context, event watch.Event) bool {
	select {
	case w.result <- event:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *watcher) sendError(ctx context.Context, err apierrors.APIStatus) {
	status := err.Status()
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	w.send(ctx, watch.Event{Type: watch.Error, Object: &status})
}

// WatchProgressSupported implements storage.ProgressRequester: false for an etcd whose progress
// notifications may run ahead of its events (ProgressSupport).
func (s *Store) WatchProgressSupported(ctx context.Context) bool { return s.progress.Supported(ctx) }

// RequestWatchProgress implements storage.ProgressRequester: every watch of this client's shared
// stream (the watches opened by Watch, which require a leader) gets a progress notification with
// the current revision once it has caught up; watches with ProgressNotify turn it into a bookmark.
func (s *Store) RequestWatchProgress(ctx context.Context) error {
	if !s.progress.Supported(ctx) {
		return errors.New("request watch progress: this etcd's progress notifications may run ahead of its events (3.4.31+ or 3.5.13+ needed)")
	}
	if err := s.client.RequestProgress(clientv3.WithRequireLeader(ctx)); err != nil {
		return fmt.Errorf("request watch progress: %w", err)
	}
	return nil
}
