package ctrlutil

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTimeout bounds how long a controller waits for the watch events
// of its own creates/deletes before it syncs anyway; it guards against events
// that never arrive.
const ExpectationsTimeout = 5 * time.Minute

// Expectations remember, per controller key, how many creates and deletes a
// controller issued whose watch events it has not seen yet. A controller does
// not act on a key with pending expectations: its informer cache is behind its
// own writes, and acting would double-create or double-delete.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	byKey map[string]*expectation
}

type expectation struct {
	adds, dels int
	setAt      time.Time
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
	if exp.adds <= 0 && exp.dels <= 0 {
		return true
	}
	return e.clock.Since(exp.setAt) > ExpectationsTimeout
}

// Expect records that adds creates and dels deletes are about to be issued.
func (e *Expectations) Expect(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[key] = &expectation{adds: adds, dels: dels, setAt: e.clock.Now()}
}

// CreationObserved lowers the pending creates of key by one (also used when a
// create failed, so the event will never come).
func (e *Expectations) CreationObserved(key string) { e.lower(key, 1, 0) }

// DeletionObserved lowers the pending deletes of key by one.
func (e *Expectations) DeletionObserved(key string) { e.lower(key, 0, 1) }

// LowerBy lowers pending creates and deletes, e.g. for a skipped batch.
func (e *Expectations) LowerBy(key string, adds, dels int) { e.lower(key, adds, dels) }

// Delete forgets key, e.g. when its owner is gone.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}

func (e *Expectations) lower(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.byKey[key]; ok {
		exp.adds -= adds
		exp.dels -= dels
	}
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
