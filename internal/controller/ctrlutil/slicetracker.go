package ctrlutil

import (
	"errors"
	"strconv"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// ErrStaleSlices is a sync's answer when the informer does not yet show the EndpointSlice writes
// the controller made for that source: acting on it would create again what was created, or keep
// what was deleted. The loop requeues the key (with backoff) until the informer caught up.
var ErrStaleSlices = errors.New("the EndpointSlice informer does not show this controller's last writes yet")

// SliceTracker remembers, per source object (a Service's key), the EndpointSlice writes a
// controller made until its informer shows them, as upstream's EndpointSliceTracker: without it a
// sync that runs on a cache missing the slices just created creates them a second time (and a
// later sync deletes the extra ones, which a client holding their names then misses). Safe for
// concurrent use; the zero value is not, use NewSliceTracker.
type SliceTracker struct {
	mu sync.Mutex
	// expect maps a source key to slice name -> the write to see.
	expect map[string]map[string]SliceWrite
}

// SliceWrite is one write of a slice: Deleted, or stored at ResourceVersion (which may be unknown,
// "", for a client that does not report it).
type SliceWrite struct {
	Deleted         bool
	ResourceVersion string
}

// NewSliceTracker returns an empty tracker.
func NewSliceTracker() *SliceTracker {
	return &SliceTracker{expect: map[string]map[string]SliceWrite{}}
}

// written records a write of slice name made for source.
func (t *SliceTracker) written(source, name string, w SliceWrite) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.expect[source]
	if m == nil {
		m = map[string]SliceWrite{}
		t.expect[source] = m
	}
	m[name] = w
}

// Stale says whether cached (the informer's slices of source) lacks one of the controller's
// writes: a slice it wrote missing or older than written, or one it deleted still there. The
// writes the cache shows are forgotten.
func (t *SliceTracker) Stale(source string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.expect[source]
	if len(m) == 0 {
		return false
	}
	byName := make(map[string]*discoveryv1.EndpointSlice, len(cached))
	for _, s := range cached {
		byName[s.Name] = s
	}
	stale := false
	for name, w := range m {
		if SliceWriteSeen(byName[name], w) {
			delete(m, name)
		} else {
			stale = true
		}
	}
	if len(m) == 0 {
		delete(t.expect, source)
	}
	return stale
}

// SliceGone is told of a slice of source the informer saw deleted: whatever was expected of it is
// settled (a deletion seen, or a slice someone else deleted, which there is no waiting for).
func (t *SliceTracker) SliceGone(source, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.expect[source]; m != nil {
		delete(m, name)
		if len(m) == 0 {
			delete(t.expect, source)
		}
	}
}

// SliceDeleted is a slice informer's delete handler for a controller whose slices carry
// managedBy: what was expected of the deleted slice is settled (SliceGone), under the key of the
// Service (or Endpoints) it belongs to.
func (t *SliceTracker) SliceDeleted(managedBy string) func(obj any) {
	return func(obj any) {
		key, ok := SliceServiceKey(obj, managedBy)
		if !ok {
			return
		}
		if s, ok := Unwrap[*discoveryv1.EndpointSlice](obj); ok {
			t.SliceGone(key, s.Name)
		}
	}
}

// Forget drops what is remembered of source (it is gone: its slices go with it).
func (t *SliceTracker) Forget(source string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.expect, source)
}

// SliceWriteSeen says whether cached (nil: not in the cache) shows write w. Resource versions are
// compared as numbers; an unknown or non-numeric one counts as seen once the slice is there. It is
// pure.
func SliceWriteSeen(cached *discoveryv1.EndpointSlice, w SliceWrite) bool {
	if w.Deleted {
		return cached == nil
	}
	if cached == nil {
		return false
	}
	want, err1 := strconv.ParseUint(w.ResourceVersion, 10, 64)
	have, err2 := strconv.ParseUint(cached.ResourceVersion, 10, 64)
	if err1 != nil || err2 != nil {
		return true
	}
	return have >= want
}
