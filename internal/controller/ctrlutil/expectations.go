package ctrlutil

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// ExpectationsTimeout bounds how long a controller waits for the watch events
// of its own creates/deletes before it syncs anyway; it guards against events
// that never arrive.
const ExpectationsTimeout = 5 * time.Minute

// Expectations remember, per controller key, how many creates and which
// deletes (by object key) a controller issued whose watch events it has not
// seen yet. Deletes are tracked by key because a deletion may be observed
// twice (deletionTimestamp set, then gone). A controller does
// not act on a key with pending expectations: its informer cache is behind its
// own writes, and acting would double-create or double-delete.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	byKey map[string]*expectation
}

type expectation struct {
	adds  int
	dels  sets.Set[string]
	setAt time.Time
}

// NewExpectations returns an empty set using clk to expire stale entries.
func NewExpectations(clk clock.PassiveClock) *Expectations {
	return &Expectations{clock: clk, byKey: map[string]*expectation{}}
}

// Satisfied reports whether key may be synced: no record, all events
// observed, or the record is older than ExpectationsTimeout.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.byKey[key]
	if !ok {
		return true
	}
	if exp.adds <= 0 && exp.dels.Len() == 0 {
		return true
	}
	return e.clock.Since(exp.setAt) > ExpectationsTimeout
}

// ExpectCreations records that adds creates are about to be issued.
func (e *Expectations) ExpectCreations(key string, adds int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[key] = &expectation{adds: adds, dels: sets.New[string](), setAt: e.clock.Now()}
}

// ExpectDeletions records that the objects with the given keys are about to be deleted.
func (e *Expectations) ExpectDeletions(key string, objectKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[key] = &expectation{dels: sets.New(objectKeys...), setAt: e.clock.Now()}
}

// CreationObserved lowers the pending creates of key by one.
func (e *Expectations) CreationObserved(key string) { e.LowerCreations(key, 1) }

// LowerCreations lowers pending creates by n, e.g. for creates that failed or
// were skipped, whose events will never come.
func (e *Expectations) LowerCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.byKey[key]; ok {
		exp.adds -= n
	}
}

// DeletionObserved marks the delete of objectKey as seen (idempotent).
func (e *Expectations) DeletionObserved(key, objectKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.byKey[key]; ok {
		exp.dels.Delete(objectKey)
	}
}

// Delete forgets key, e.g. when its owner is gone.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}

// SlowStartBatch calls fn count times in batches of 1, 2, 4, ... starting at
// initialBatch, stopping after the first batch with a failure so a controller
// that cannot create (quota, bad template) does not flood the API. It returns
// how many calls succeeded and the first error.
func SlowStartBatch(count, initialBatch int, fn func() error) (int, error) {
	remaining := count
	successes := 0
	for batch := min(remaining, initialBatch); batch > 0; batch = min(2*batch, remaining) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		successes += batch - len(errs)
		if len(errs) > 0 {
			return successes, <-errs
		}
		remaining -= batch
	}
	return successes, nil
}
