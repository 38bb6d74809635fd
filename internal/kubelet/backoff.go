package kubelet

import (
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// crashLoopBackoff tracks the restart delay of each failing container: the
// first restart is immediate, then each restart waits twice as long as the
// previous one, up to a maximum.
type crashLoopBackoff struct {
	clock   clock.Clock
	initial time.Duration
	max     time.Duration

	mu      sync.Mutex
	entries map[string]backoffEntry
}

type backoffEntry struct {
	delay       time.Duration
	lastRestart time.Time
}

func newCrashLoopBackoff(clk clock.Clock, initial, maxDelay time.Duration) *crashLoopBackoff {
	return &crashLoopBackoff{clock: clk, initial: initial, max: maxDelay, entries: map[string]backoffEntry{}}
}

func backoffKey(uid types.UID, kind, container string) string {
	return string(uid) + "/" + kind + "/" + container
}

// inBackoff reports whether a restart must wait, and for how long, and the
// delay of the current back-off period (for the CrashLoopBackOff message).
func (b *crashLoopBackoff) inBackoff(key string) (wait, period time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return 0, 0
	}
	if remaining := e.lastRestart.Add(e.delay).Sub(b.clock.Now()); remaining > 0 {
		return remaining, e.delay
	}
	return 0, e.delay
}

// restarted records a restart and lengthens the next wait.
func (b *crashLoopBackoff) restarted(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		e.delay = b.initial
	} else {
		e.delay = min(2*e.delay, b.max)
	}
	e.lastRestart = b.clock.Now()
	b.entries[key] = e
}

// reset forgets a container's back-off (it ran long enough to be healthy).
func (b *crashLoopBackoff) reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

func (b *crashLoopBackoff) forgetPod(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for key := range b.entries {
		if strings.HasPrefix(key, string(uid)+"/") {
			delete(b.entries, key)
		}
	}
}
