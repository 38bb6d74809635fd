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
// Reads and writes are passed to the wrapped store: only watches are served from memory.
// It must not import the API server, and never mutates an object it hands out or receives: every
// watcher gets its own copy, because the API layer's encoders set type metadata on what they encode.
package watchcache
