package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeRecorder creates ConfigMaps through one or more nodes until stopped and records every
// write the API acknowledged, so a test can check that none was lost across a fault.
type writeRecorder struct {
	prefix string
	mu     sync.Mutex
	acked  []string
	// firstFailure and lastFailure bound the writes that failed; slowest is the longest write.
	firstFailure, lastFailure time.Time
	slowest                   time.Duration
	// failures are the first failed writes' errors (a handful), for the test's log.
	failures []string
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// startWriteRecorder starts one writer per node in writers, each creating ConfigMaps named
// prefix-<writer>-<n> in default. The writers stop with the test at the latest.
func startWriteRecorder(t *testing.T, prefix string, writers ...*cluster) *writeRecorder {
	w := &writeRecorder{prefix: prefix, stop: make(chan struct{})}
	t.Cleanup(w.halt)
	for wi, c := range writers {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-w.stop:
					return
				default:
				}
				name := fmt.Sprintf("%s-w%d-%d", prefix, wi, i)
				began := time.Now()
				out, err := c.kubectlErr("create", "configmap", name, "--request-timeout=15s")
				w.mu.Lock()
				w.slowest = max(w.slowest, time.Since(began))
				if err == nil {
					w.acked = append(w.acked, name)
				} else {
					if w.firstFailure.IsZero() {
						w.firstFailure = time.Now()
					}
					w.lastFailure = time.Now()
					if len(w.failures) < 5 {
						w.failures = append(w.failures, fmt.Sprintf("%s %s after %s: %v: %s", w.lastFailure.Format("15:04:05.000"),
							name, time.Since(began).Round(time.Millisecond), err, strings.TrimSpace(out)))
					}
				}
				w.mu.Unlock()
				select {
				case <-w.stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	}
	return w
}

// halt stops the writers and waits for them.
func (w *writeRecorder) halt() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// count is how many writes were acknowledged so far.
func (w *writeRecorder) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// waitForMore waits until n more writes than now have been acknowledged: writes work again.
func (w *writeRecorder) waitForMore(t *testing.T, n int, within time.Duration) {
	t.Helper()
	before := w.count()
	eventually(t, within, func() error {
		if got := w.count() - before; got < n {
			return fmt.Errorf("%d writes acknowledged, want %d", got, n)
		}
		return nil
	})
}

// stopAndCheck stops the writers and reads every acknowledged write back through reader; it
// returns how many there were and the window in which writes failed after since (zero if none).
func (w *writeRecorder) stopAndCheck(t *testing.T, reader *cluster, fault string, since time.Time) (int, time.Duration) {
	t.Helper()
	w.halt()
	out := reader.kubectl("get", "configmaps", "-o", "name")
	if len(w.acked) == 0 {
		t.Fatalf("no write was acknowledged across %s", fault)
	}
	for _, n := range w.acked {
		if !strings.Contains(out, "configmap/"+n+"\n") {
			t.Fatalf("acknowledged write %s lost across %s", n, fault)
		}
	}
	var window time.Duration
	if !w.lastFailure.IsZero() && w.lastFailure.After(since) {
		first := w.firstFailure
		if first.Before(since) {
			first = since
		}
		window = w.lastFailure.Sub(first)
	}
	t.Logf("%d acknowledged writes all read back after %s; failed-write window: %s; slowest create: %s",
		len(w.acked), fault, window.Round(100*time.Millisecond), w.slowest.Round(100*time.Millisecond))
	for _, f := range w.failures {
		t.Logf("failed write: %s", f)
	}
	return len(w.acked), window
}
