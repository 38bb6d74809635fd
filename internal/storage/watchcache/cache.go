package watchcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/storage"
)

// Defaults for Config's zero values.
const (
	DefaultHistorySize        = 4096
	DefaultHistoryBytes       = 16 << 20
	DefaultWatcherBuffer      = 1024
	DefaultBookmarkInterval   = 5 * time.Second
	DefaultSlowWatcherTimeout = 100 * time.Millisecond
	// DefaultEncodedBytes bounds the memoized encodings of list items and watch events per resource.
	DefaultEncodedBytes = 128 << 20
	// DefaultConsistentReadTimeout bounds how long a consistent list waits for the cache to reach
	// etcd's revision before it is read from etcd instead (upstream waits as long).
	DefaultConsistentReadTimeout = 3 * time.Second
	// initTimeout bounds the list that fills a resource's cache.
	initTimeout = time.Minute
)

// Config tunes a Cache.
type Config struct {
	// NewFunc and NewListFunc make empty objects and lists of the stored type (required): bookmarks
	// are NewFunc objects, the state is filled from a NewListFunc list.
	NewFunc     func() runtime.Object
	NewListFunc func() runtime.Object
	// Clock drives bookmarks and the slow-watcher timeout (default: the real clock).
	Clock clock.WithTicker
	// HistorySize is how many recent events per resource are kept to serve watches from a recent
	// resourceVersion.
	HistorySize int
	// HistoryBytes bounds the same history by the estimated size of its objects (default 16 MiB
	// per resource; negative: by count only). Watches from a revision the history no longer
	// reaches are served by etcd, so a smaller history costs speed, never correctness.
	HistoryBytes int64
	// WatcherBuffer is how many events a watcher may fall behind before it is closed.
	WatcherBuffer int
	// BookmarkInterval is how often watchers that allow bookmarks and received nothing else get one.
	BookmarkInterval time.Duration
	// SlowWatcherTimeout is how long an event's delivery waits for watchers whose buffer is full before
	// closing them; negative closes them at once.
	SlowWatcherTimeout time.Duration
	// EncodedBytes bounds the bytes of the memoized encodings of list items and watch events per
	// resource (default 128 MiB; negative: nothing is memoized). Over it, objects are encoded per
	// response.
	EncodedBytes int64
	// ConsistentReadTimeout bounds how long a list waits for the cache to catch up with the revision
	// it must reflect before it goes to etcd.
	ConsistentReadTimeout time.Duration
	Logger                *slog.Logger
	// Metrics, when set, records the cache's Prometheus metrics (see NewMetrics).
	Metrics *Metrics
}

func (c *Config) setDefaults() {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.HistorySize <= 0 {
		c.HistorySize = DefaultHistorySize
	}
	switch {
	case c.HistoryBytes == 0:
		c.HistoryBytes = DefaultHistoryBytes
	case c.HistoryBytes < 0:
		c.HistoryBytes = 0
	}
	if c.WatcherBuffer <= 0 {
		c.WatcherBuffer = DefaultWatcherBuffer
	}
	if c.BookmarkInterval <= 0 {
		c.BookmarkInterval = DefaultBookmarkInterval
	}
	if c.SlowWatcherTimeout == 0 {
		c.SlowWatcherTimeout = DefaultSlowWatcherTimeout
	}
	switch {
	case c.EncodedBytes == 0:
		c.EncodedBytes = DefaultEncodedBytes
	case c.EncodedBytes < 0:
		c.EncodedBytes = 0
	}
	if c.ConsistentReadTimeout <= 0 {
		c.ConsistentReadTimeout = DefaultConsistentReadTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Cache is a storage.Interface whose watches are served from memory; every other call goes to the
// wrapped store.
type Cache struct {
	store storage.Interface
	cfg   Config
	// base is the lifetime of the underlying watches; cancelled by Stop.
	base     context.Context
	stopBase context.CancelFunc

	// fields shares identical managedFields field sets among the cache's objects (intern.go).
	fields *fieldsInterner

	mu        sync.Mutex
	resources map[string]*resourceCache
	stopped   bool
}

var _ storage.Interface = (*Cache)(nil)

// New wraps store. Call Stop to end the underlying watches.
func New(store storage.Interface, cfg Config) (*Cache, error) {
	if store == nil {
		return nil, errors.New("watch cache: no store to wrap")
	}
	if cfg.NewFunc == nil || cfg.NewListFunc == nil {
		return nil, errors.New("watch cache: NewFunc and NewListFunc are required")
	}
	cfg.setDefaults()
	base, stop := context.WithCancel(context.Background())
	return &Cache{store: store, cfg: cfg, base: base, stopBase: stop, fields: newFieldsInterner(), resources: map[string]*resourceCache{}}, nil
}

// Stop ends every underlying watch and closes every watcher.
func (c *Cache) Stop() {
	c.mu.Lock()
	c.stopped = true
	resources := make([]*resourceCache, 0, len(c.resources))
	for _, rc := range c.resources {
		resources = append(resources, rc)
	}
	c.mu.Unlock()
	c.stopBase()
	for _, rc := range resources {
		<-rc.done
	}
}

// Create implements storage.Interface.
func (c *Cache) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	return c.store.Create(ctx, key, obj, out)
}

// Get implements storage.Interface. A read of resourceVersion "0" (any version, as admission's
// lookups and a client's ?resourceVersion=0 ask) of a key the resource's running cache holds is a
// copy from memory, as kube-apiserver's cacher answers it; the admission plugins that upstream
// backs with informers (the namespace of every namespaced create, a pod's service account, its
// priority class) cost no etcd read then. A key the cache does not hold is read from the store,
// so an object created a moment ago, which the cache may not have seen yet, is still found: a
// client that creates a namespace and then an object in it is never told the namespace is
// missing. Every other resourceVersion goes to the store.
func (c *Cache) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if root, ok := ResourceRoot(key); ok && opts.ResourceVersion == "0" {
		obj := c.cachedIn(root, key)
		fromCache := obj != nil && copyInto(obj, out)
		c.cfg.Metrics.getServed(root, fromCache)
		if fromCache {
			return nil
		}
	}
	return c.store.Get(ctx, key, opts, out)
}

// copyInto sets out to a deep copy of obj (the cache's objects are shared) and reports whether it
// could: out must be a pointer of obj's own type.
func copyInto(obj, out runtime.Object) bool {
	src, dst := reflect.ValueOf(obj), reflect.ValueOf(out)
	if src.Type() != dst.Type() || dst.Kind() != reflect.Pointer || dst.IsNil() {
		return false
	}
	dst.Elem().Set(reflect.ValueOf(obj.DeepCopyObject()).Elem())
	return true
}

// List implements storage.Interface: from memory when it can (list.go), otherwise from the wrapped store.
func (c *Cache) List(ctx context.Context, prefix string, opts storage.ListOptions, listObj runtime.Object) error {
	return c.listInto(ctx, prefix, opts, listObj)
}

// GuaranteedUpdate implements storage.Interface. When the store can start from a cached copy
// (storage.CachedUpdater) and the key's resource is cached, its object in memory saves the read
// of the key, as kube-apiserver's cacher passes its cachedExistingObject.
func (c *Cache) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	if cu, ok := c.store.(storage.CachedUpdater); ok {
		if cached := c.cachedObject(key); cached != nil {
			return cu.GuaranteedUpdateFrom(ctx, key, dest, ignoreNotFound, preconditions, tryUpdate, cached)
		}
	}
	return c.store.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, preconditions, tryUpdate)
}

// cachedObject is key's object in a running cache of its resource, or nil. It never starts a
// cache: a resource nobody watches or lists is not worth one for its updates.
func (c *Cache) cachedObject(key string) runtime.Object {
	root, ok := ResourceRoot(key)
	if !ok {
		return nil
	}
	return c.cachedIn(root, key)
}

// cachedIn is cachedObject for a key whose resource root the caller has already found.
func (c *Cache) cachedIn(root, key string) runtime.Object {
	rc := c.readyResource(root, false)
	if rc == nil {
		return nil
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.failed {
		return nil
	}
	return rc.state[key]
}

// Delete implements storage.Interface.
func (c *Cache) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc) error {
	return c.store.Delete(ctx, key, out, preconditions, validateDeletion)
}

// Count implements storage.Interface.
func (c *Cache) Count(ctx context.Context, prefix string) (int64, error) {
	return c.store.Count(ctx, prefix)
}

// CurrentRevision implements storage.Interface.
func (c *Cache) CurrentRevision(ctx context.Context) (int64, error) {
	return c.store.CurrentRevision(ctx)
}

// Ready implements storage.Interface.
func (c *Cache) Ready(ctx context.Context) error {
	return c.store.Ready(ctx)
}

// Watch implements storage.Interface from memory when it can; see the package documentation.
func (c *Cache) Watch(ctx context.Context, prefix string, opts storage.ListOptions) (watch.Interface, error) {
	root, ok := ResourceRoot(prefix)
	if !ok {
		return c.store.Watch(ctx, prefix, opts)
	}
	requested, err := parseRevision(opts.ResourceVersion)
	if err != nil {
		// The wrapped store words the error for a malformed resourceVersion.
		return c.store.Watch(ctx, prefix, opts)
	}
	sendInitial := requested == 0
	if opts.SendInitialEvents != nil {
		sendInitial = *opts.SendInitialEvents
	}
	rc, err := c.resource(ctx, root, requested)
	if err != nil {
		return nil, err
	}
	w := newWatcher(ctx, rc, prefix, opts)
	w.endBookmark = opts.SendInitialEvents != nil && *opts.SendInitialEvents
	var registered bool
	switch {
	case sendInitial && opts.ResourceVersion == "0":
		// "Any state" is the cache's own.
		registered = rc.registerFromState(w)
	case sendInitial:
		objs, rev, err := c.initialState(ctx, w.filterKey, opts, requested)
		if err != nil {
			w.cancel()
			return nil, err
		}
		w.initial = objs
		registered = rc.register(w, rev)
	case requested == 0:
		rev, err := c.store.CurrentRevision(ctx)
		if err != nil {
			w.cancel()
			return nil, err
		}
		registered = rc.register(w, rev)
	default:
		registered = rc.register(w, requested)
	}
	if !registered {
		// Older than the history (or the resource's cache just failed): etcd answers, with events
		// or with 410 Expired.
		w.cancel()
		c.cfg.Metrics.passedThroughWatch(root)
		return c.store.Watch(ctx, prefix, opts)
	}
	go w.run()
	return w, nil
}

// resource returns the running cache of root, starting it when there is none. requested is the
// revision the triggering watch starts from: the cache's history starts there when etcd still has it,
// so that watch and the ones started with it are served from memory.
func (c *Cache) resource(ctx context.Context, root string, requested int64) (*resourceCache, error) {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil, errors.New("watch cache stopped")
	}
	rc, ok := c.resources[root]
	if !ok {
		rc = newResourceCache(c, root)
		c.resources[root] = rc
		go rc.start(requested)
	}
	c.mu.Unlock()
	select {
	case <-rc.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if rc.initErr != nil {
		return nil, rc.initErr
	}
	return rc, nil
}

// forget drops rc from the cache once it has failed, so the next watch starts a fresh one.
func (c *Cache) forget(rc *resourceCache) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resources[rc.root] == rc {
		delete(c.resources, rc.root)
	}
}

// initialState lists what a watch with initial events starts with, and the revision it was read at,
// from the wrapped store (a consistent read, as without the cache).
func (c *Cache) initialState(ctx context.Context, key string, opts storage.ListOptions, minRev int64) ([]runtime.Object, int64, error) {
	listOpts := storage.ListOptions{Predicate: storage.Predicate{
		Label: opts.Predicate.Label, Field: opts.Predicate.Field, Attrs: opts.Predicate.Attrs,
	}, Recursive: opts.Recursive}
	if minRev > 0 {
		listOpts.ResourceVersion = strconv.FormatInt(minRev, 10)
		listOpts.ResourceVersionMatch = string(metav1.ResourceVersionMatchNotOlderThan)
	}
	objs, rev, err := c.list(ctx, key, listOpts)
	if err != nil {
		var se *storage.Error
		if errors.As(err, &se) {
			se.Op = storage.OpWatch
		}
		return nil, 0, err
	}
	return objs, rev, nil
}

func (c *Cache) list(ctx context.Context, key string, opts storage.ListOptions) ([]runtime.Object, int64, error) {
	list := c.cfg.NewListFunc()
	if err := c.store.List(ctx, key, opts, list); err != nil {
		return nil, 0, err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", key, err)
	}
	listAccessor, err := meta.ListAccessor(list)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", key, err)
	}
	rev, err := strconv.ParseInt(listAccessor.GetResourceVersion(), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: revision: %w", key, err)
	}
	return objs, rev, nil
}

// ResourceRoot is the key root "/registry/<group>/<resource>/" of a key or prefix under it, the unit
// one underlying watch covers. Keys of another shape are not cached.
func ResourceRoot(key string) (string, bool) {
	if !strings.HasPrefix(key, "/") {
		return "", false
	}
	parts := strings.SplitN(key[1:], "/", 4)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", false
	}
	return "/" + parts[0] + "/" + parts[1] + "/" + parts[2] + "/", true
}

// objectKey is where an object lives under root: root/<namespace>/<name>, or root/<name> for
// cluster-scoped objects, as the API server lays keys out.
func objectKey(root string, obj runtime.Object) (string, int64, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return "", 0, err
	}
	rev, err := parseRevision(accessor.GetResourceVersion())
	if err != nil {
		return "", 0, err
	}
	if ns := accessor.GetNamespace(); ns != "" {
		return root + ns + "/" + accessor.GetName(), rev, nil
	}
	return root + accessor.GetName(), rev, nil
}

// parseRevision reads a resourceVersion; "" and "0" are 0.
func parseRevision(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid resourceVersion %q", rv)
	}
	return n, nil
}

func ensureSlash(prefix string) string {
	if strings.HasSuffix(prefix, "/") {
		return prefix
	}
	return prefix + "/"
}
