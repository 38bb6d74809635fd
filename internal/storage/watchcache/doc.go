// Package watchcache serves storage watches from memory: a decorator around a storage.Interface that
// keeps one underlying watch per resource (key root "/registry/<group>/<resource>/"), the current
// state of every object under it, and a ring buffer of recent events, and fans each event out to any
// number of watchers, each with its own key range, predicate and bounded buffer.
//
// It preserves the storage.Interface watch semantics: ADDED/MODIFIED/DELETED transitions as objects
// start or stop matching a watcher's predicate, initial events for resourceVersion "" and "0",
// sendInitialEvents with the initial-events-end bookmark, and Expired (410) for revisions the etcd
// store has compacted. A watch from a revision older than the ring buffer is passed to the wrapped
// store unchanged, so the answer (events or 410) is exactly what it would have been without the cache.
// A watcher that cannot keep up is closed (its buffered events are delivered first), so its client
// resumes from its last resourceVersion, as Kubernetes' watch cache does. Watchers that allow bookmarks
// get one each bookmark interval in which nothing else was sent to them.
//
// Lists are served from memory too (list.go), with the same items, order, resourceVersion, continue
// tokens and remaining counts as the etcd store: a consistent list (resourceVersion "") first reads
// etcd's current revision with a count-only quorum read, asks etcd for a watch progress notification
// and waits (bounded) until the cache has applied that revision; "0" and NotOlderThan are served
// from the state, Exact and continue tokens from the state rebuilt with the history while it reaches
// back that far. Anything else (single keys, malformed options, a revision the cache does not hold,
// a cache not yet filled, a wait that timed out) goes to the wrapped store, which answers and words
// errors as without the cache. ListShared hands out the cache's own objects, each version with its
// encodings memoized once per wire form (within a byte budget, dropped when the version leaves the
// state), so the API server streams list responses without copying or re-encoding them. Watches
// the API server opts in (ObjectSharer) send the cache's objects too, each event's encodings
// memoized for all its watchers and dropped when the event leaves the history; every other watcher
// still gets its own copies.
// A get at resourceVersion "0" of a key the running cache holds is a copy of its object (as
// kube-apiserver's cacher answers it; admission's lookups read this way); every other get, a key the
// cache does not hold included, and every write are passed to the wrapped store.
// It must not import the API server, and never mutates an object it hands out or receives: List
// and watchers that do not opt in get copies, because the API layer's encoders set type metadata on
// what they encode; shared objects are encoded through shallow copies.
package watchcache
