package watchcache

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
)

// sharedCatchUp bounds how long WatchShared waits for the cache to reach a requested revision
// before it hands the watch to Watch (which serves it from etcd when the cache cannot).
const sharedCatchUp = 3 * time.Second

// sharedPoll is how often WatchShared looks whether the cache has reached a requested revision.
const sharedPoll = 5 * time.Millisecond

// WatchShared is Watch for readers in this process that never mutate what they receive (informer
// caches fed by an in-process ListerWatcher): every event carries the cache's own object, shared
// with the cache's state and every other shared watcher, without a copy. Initial events (resourceVersion
// "" or "0", or sendInitialEvents) come from the cache's state once it has reached the requested
// revision; for "" that is the state the cache holds, which trails etcd only by the dispatch of
// events already written. What the cache cannot serve goes to Watch, whose objects are copies.
func (c *Cache) WatchShared(ctx context.Context, prefix string, opts storage.ListOptions) (watch.Interface, error) {
	root, ok := ResourceRoot(prefix)
	if !ok {
		return c.Watch(ctx, prefix, opts)
	}
	requested, err := parseRevision(opts.ResourceVersion)
	if err != nil {
		return c.Watch(ctx, prefix, opts)
	}
	sendInitial := requested == 0
	if opts.SendInitialEvents != nil {
		sendInitial = *opts.SendInitialEvents
	}
	if !sendInitial && requested == 0 {
		// "From now" needs etcd's revision, which Watch reads; its events are as cheap to copy
		// as the ones that follow are to share.
		return c.Watch(ctx, prefix, opts)
	}
	rc, err := c.resource(ctx, root, requested)
	if err != nil {
		return nil, err
	}
	if sendInitial && !rc.reached(ctx, c, requested) {
		return c.Watch(ctx, prefix, opts)
	}
	w := newWatcher(ctx, rc, prefix, opts)
	w.shared = true
	w.endBookmark = opts.SendInitialEvents != nil && *opts.SendInitialEvents
	var registered bool
	if sendInitial {
		registered = rc.registerFromState(w)
	} else {
		registered = rc.register(w, requested)
	}
	if !registered {
		w.cancel()
		return c.Watch(ctx, prefix, opts)
	}
	go w.run()
	return w, nil
}

// reached waits (at most sharedCatchUp) until the cache's state is at revision rev or later.
func (rc *resourceCache) reached(ctx context.Context, c *Cache, rev int64) bool {
	deadline := c.cfg.Clock.Now().Add(sharedCatchUp)
	for {
		rc.mu.Lock()
		cur, failed := rc.rev, rc.failed
		rc.mu.Unlock()
		switch {
		case failed:
			return false
		case cur >= rev:
			return true
		case !c.cfg.Clock.Now().Before(deadline):
			return false
		}
		timer := c.cfg.Clock.NewTimer(sharedPoll)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-timer.C():
		}
	}
}

// own is the object w hands out for obj: obj itself for shared watchers, a copy for the others
// (the API layer's encoders set type metadata on what they encode).
func (w *cacheWatcher) own(obj runtime.Object) runtime.Object {
	if w.shared {
		return obj
	}
	return obj.DeepCopyObject()
}
