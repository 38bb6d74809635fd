package watchcache

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
)

// progressRequestInterval is how often a list waiting for the cache to catch up asks etcd again
// for a progress notification (the first request may find the watch stream still catching up).
const progressRequestInterval = 100 * time.Millisecond

// listSource says where a list is answered from.
type listSource int

const (
	// fromStore: the wrapped store answers, and words any error in the options.
	fromStore listSource = iota
	// fromLatest: a consistent read, from the cache once it has applied etcd's current revision.
	fromLatest
	// fromAny: resourceVersion "0", the cache's state as it is.
	fromAny
	// fromNotOlder: the cache's state once it has reached rev.
	fromNotOlder
	// fromRevision: the state at exactly rev (match Exact, or the revision of a continue token),
	// rebuilt from the history.
	fromRevision
)

// listPlan is where and at which revision a list is read, and the page it asks for.
type listPlan struct {
	source    listSource
	rev       int64
	keyPrefix string
	startKey  string
	limit     int64
}

// planList decides how a list is served. Everything unusual (single keys, malformed or
// contradictory options, the legacy "resourceVersion with a limit") goes to the wrapped store, so
// errors and edge cases are exactly the store's.
func planList(prefix string, opts storage.ListOptions) listPlan {
	p := listPlan{keyPrefix: ensureSlash(prefix), limit: max(opts.Predicate.Limit, 0)}
	p.startKey = p.keyPrefix
	if !opts.Recursive {
		return p
	}
	match := metav1.ResourceVersionMatch(opts.ResourceVersionMatch)
	if opts.Predicate.Continue != "" {
		if (opts.ResourceVersion != "" && opts.ResourceVersion != "0") || match != "" {
			return p
		}
		startKey, rev, err := storage.DecodeContinue(opts.Predicate.Continue, p.keyPrefix)
		if err != nil || rev <= 0 {
			return p
		}
		p.source, p.rev, p.startKey = fromRevision, rev, startKey
		return p
	}
	switch opts.ResourceVersion {
	case "":
		if match == "" {
			p.source = fromLatest
		}
		return p
	case "0":
		if match == "" || match == metav1.ResourceVersionMatchNotOlderThan {
			p.source = fromAny
		}
		return p
	}
	rev, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil || rev <= 0 {
		return p
	}
	switch match {
	case metav1.ResourceVersionMatchExact:
		p.source, p.rev = fromRevision, rev
	case metav1.ResourceVersionMatchNotOlderThan:
		p.source, p.rev = fromNotOlder, rev
	case "":
		// Without a limit this is "not older than"; with one, Kubernetes reads it as an exact
		// revision, which the store decides.
		if p.limit == 0 {
			p.source, p.rev = fromNotOlder, rev
		}
	}
	return p
}

// memoryList is one page read from memory.
type memoryList struct {
	items     []*sharedObject
	rev       int64
	continued string
	remaining *int64
}

// ListShared implements storage.SharedLister: the page from memory when the cache can answer it.
func (c *Cache) ListShared(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.SharedList, bool, error) {
	page, ok, err := c.listFromMemory(ctx, prefix, opts)
	if err != nil || !ok {
		return nil, false, err
	}
	out := &storage.SharedList{
		Items:              make([]storage.SharedObject, len(page.items)),
		ResourceVersion:    strconv.FormatInt(page.rev, 10),
		Continue:           page.continued,
		RemainingItemCount: page.remaining,
	}
	for i, item := range page.items {
		out.Items[i] = item
	}
	return out, true, nil
}

var _ storage.SharedLister = (*Cache)(nil)

// listInto answers List: a copy of every item from memory, or the wrapped store's answer.
func (c *Cache) listInto(ctx context.Context, prefix string, opts storage.ListOptions, listObj runtime.Object) error {
	page, ok, err := c.listFromMemory(ctx, prefix, opts)
	if err != nil {
		return err
	}
	if !ok {
		return c.store.List(ctx, prefix, opts, listObj)
	}
	listAccessor, err := meta.ListAccessor(listObj)
	if err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	objs := make([]runtime.Object, len(page.items))
	for i, item := range page.items {
		// The cache's objects are shared: callers get their own copies.
		objs[i] = item.obj.DeepCopyObject()
	}
	if err := meta.SetList(listObj, objs); err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	listAccessor.SetResourceVersion(strconv.FormatInt(page.rev, 10))
	listAccessor.SetContinue(page.continued)
	listAccessor.SetRemainingItemCount(page.remaining)
	return nil
}

// listFromMemory serves a list from the resource's cache. ok is false when the wrapped store must
// answer: options the cache leaves to it, a cache that is not running yet (it is started, for the
// next list), a revision it does not hold, or a wait for freshness that timed out.
func (c *Cache) listFromMemory(ctx context.Context, prefix string, opts storage.ListOptions) (*memoryList, bool, error) {
	plan := planList(prefix, opts)
	root, rootOK := ResourceRoot(plan.keyPrefix)
	if plan.source == fromStore || !rootOK {
		c.cfg.Metrics.listServed(root, false)
		return nil, false, nil
	}
	rc := c.runningResource(root)
	if rc == nil {
		c.cfg.Metrics.listServed(root, false)
		return nil, false, nil
	}
	switch plan.source {
	case fromLatest:
		// A quorum read of etcd's current revision (count-only): the list must reflect every
		// write acknowledged before it.
		rev, err := c.store.CurrentRevision(ctx)
		if err != nil {
			c.cfg.Metrics.listServed(root, false)
			return nil, false, nil
		}
		if !rc.waitFor(ctx, rev) {
			c.cfg.Metrics.listServed(root, false)
			return nil, false, nil
		}
	case fromNotOlder:
		if !rc.waitFor(ctx, plan.rev) {
			c.cfg.Metrics.listServed(root, false)
			return nil, false, nil
		}
	case fromRevision:
		// A past revision (a continue token's, or an exact match) is served from the history only
		// while etcd still has it: once compacted, the store answers 410 and offers the
		// inconsistent-continue token (the chunking conformance spec waits for that expiry).
		if keeper, ok := c.store.(storage.RevisionKeeper); ok {
			if available, err := keeper.RevisionAvailable(ctx, plan.rev); err != nil || !available {
				c.cfg.Metrics.listServed(root, false)
				return nil, false, nil
			}
		}
	}
	page, ok, err := rc.list(plan, opts.Predicate)
	c.cfg.Metrics.listServed(root, ok && err == nil)
	return page, ok, err
}

// runningResource is the ready cache of root, or nil: a missing one is started in the background.
func (c *Cache) runningResource(root string) *resourceCache {
	return c.readyResource(root, true)
}

// readyResource is the cache of root when it has loaded without error, or nil. With start, a
// missing cache is created and started in the background (it answers from a later call on).
func (c *Cache) readyResource(root string, start bool) *resourceCache {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	rc, ok := c.resources[root]
	if !ok && start {
		rc = newResourceCache(c, root)
		c.resources[root] = rc
		go rc.start(0)
	}
	c.mu.Unlock()
	if rc == nil {
		return nil
	}
	select {
	case <-rc.ready:
		if rc.initErr != nil {
			return nil
		}
		return rc
	default:
		return nil
	}
}

// waitFor waits, bounded by ConsistentReadTimeout, until the cache has applied every change up to
// rev, asking the store for progress notifications meanwhile. False on timeout, cancellation, a
// failed cache, or a store that cannot be asked.
func (rc *resourceCache) waitFor(ctx context.Context, rev int64) bool {
	cfg := rc.cache.cfg
	requester, canAsk := rc.cache.store.(storage.ProgressRequester)
	canAsk = canAsk && requester.WatchProgressSupported(ctx)
	var timeout, tick <-chan time.Time
	for asked := false; ; {
		rc.mu.Lock()
		current, failed, changed := rc.rev, rc.failed, rc.lists.waitChLocked()
		rc.mu.Unlock()
		switch {
		case failed:
			return false
		case current >= rev:
			return true
		case !canAsk:
			return false
		}
		if !asked {
			asked = true
			timer := cfg.Clock.NewTimer(cfg.ConsistentReadTimeout)
			defer timer.Stop()
			ticker := cfg.Clock.NewTicker(progressRequestInterval)
			defer ticker.Stop()
			timeout, tick = timer.C(), ticker.C()
			rc.requestProgress(ctx, requester)
		}
		select {
		case <-changed:
		case <-tick:
			rc.requestProgress(ctx, requester)
		case <-timeout:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (rc *resourceCache) requestProgress(ctx context.Context, requester storage.ProgressRequester) {
	if err := requester.RequestWatchProgress(ctx); err != nil {
		rc.cache.cfg.Logger.Debug("request watch progress", "resource", rc.root, "err", err)
	}
}

// list reads one page at the plan's revision. ok is false when the cache does not hold that revision.
func (rc *resourceCache) list(plan listPlan, pred storage.Predicate) (*memoryList, bool, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.failed {
		return nil, false, nil
	}
	readRev := rc.rev
	var overrides map[string]runtime.Object
	if plan.source == fromRevision {
		if plan.rev > rc.rev || plan.rev < rc.historyFrom {
			return nil, false, nil
		}
		readRev = plan.rev
		if plan.rev < rc.lists.lastChange {
			overrides = rc.stateAtLocked(plan.rev)
		}
	}
	keys := rc.keysLocked(plan, overrides)
	var (
		items     []*sharedObject
		lastKey   string
		hasMore   bool
		remaining int64
	)
	for _, key := range keys {
		obj, current := rc.state[key], true
		if old, ok := overrides[key]; ok {
			obj, current = old, false
		}
		if obj == nil {
			continue
		}
		if plan.limit > 0 && int64(len(items)) == plan.limit {
			// The page is full: every further key is a remaining item, as etcd counts them.
			hasMore = true
			if !pred.Empty() {
				break
			}
			remaining++
			continue
		}
		matches, err := pred.Matches(obj)
		if err != nil {
			return nil, true, fmt.Errorf("list %s: evaluate selectors on %s: %w", plan.keyPrefix, key, err)
		}
		if matches {
			items = append(items, rc.lists.sharedLocked(key, obj, current))
			lastKey = key
		}
	}
	page := &memoryList{items: items, rev: readRev}
	if plan.limit > 0 && hasMore {
		token, err := storage.EncodeContinue(lastKey+"\x00", plan.keyPrefix, readRev)
		if err != nil {
			return nil, true, fmt.Errorf("list %s: %w", plan.keyPrefix, err)
		}
		page.continued = token
		if pred.Empty() {
			page.remaining = &remaining
		}
	}
	return page, true, nil
}

// stateAtLocked is what differs between the state at rev and the current state: for each key
// changed after rev, its object at rev (nil: it did not exist). rev must be within the history.
func (rc *resourceCache) stateAtLocked(rev int64) map[string]runtime.Object {
	overrides := map[string]runtime.Object{}
	for _, e := range rc.hist.after(rev) {
		if _, seen := overrides[e.key]; seen || e.typ == watch.Bookmark {
			continue
		}
		// The first change after rev tells what the key held at rev.
		if e.typ == watch.Added {
			overrides[e.key] = nil
		} else {
			overrides[e.key] = e.prev
		}
	}
	return overrides
}

// keysLocked lists, in key order, the keys in the plan's range from its start key: the current
// state's, plus those overrides bring back.
func (rc *resourceCache) keysLocked(plan listPlan, overrides map[string]runtime.Object) []string {
	sorted := rc.lists.sortedKeysLocked(rc.state)
	from := sort.SearchStrings(sorted, plan.startKey)
	to := from
	for to < len(sorted) && strings.HasPrefix(sorted[to], plan.keyPrefix) {
		to++
	}
	keys := sorted[from:to]
	var extra []string
	for key, obj := range overrides {
		if _, inState := rc.state[key]; obj != nil && !inState && key >= plan.startKey && strings.HasPrefix(key, plan.keyPrefix) {
			extra = append(extra, key)
		}
	}
	if len(extra) == 0 {
		return keys
	}
	merged := append(slices.Clone(keys), extra...)
	slices.Sort(merged)
	return merged
}
