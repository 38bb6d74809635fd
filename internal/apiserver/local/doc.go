// Package local is the in-process ListerWatcher: informers of components that run in the same
// process as the API server (controller manager, scheduler) read the API server's watch cache
// directly, receiving the cache's own objects (no serialization, no decode, no copy), so a pod is
// held once in the process however many informers cache it.
//
// It owns turning client-go list and watch options (label and field selectors, resourceVersion,
// resourceVersionMatch, sendInitialEvents, bookmarks, timeouts) into watch-cache requests, and the
// informers it builds for a SharedInformerFactory. Objects it hands out are shared and immutable by
// contract: a reader must deep-copy before changing one. It serves reads only: writes still go
// through the API server (authentication, authorization, admission), and it must not be used by a
// component on a node without the API server, which keeps using client-go.
package local
