package kubeletauth

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ttlCache remembers review answers until they expire. It holds at most max entries: when full,
// expired entries are dropped first and, if none were, everything (a flood of distinct tokens
// costs reviews, never memory).
type ttlCache[V any] struct {
	clock clock.PassiveClock
	max   int

	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](c clock.PassiveClock, max int) *ttlCache[V] {
	return &ttlCache[V]{clock: c, max: max, entries: map[string]ttlEntry[V]{}}
}

func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.clock.Now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *ttlCache[V]) put(key string, v V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			clear(c.entries)
		}
	}
	c.entries[key] = ttlEntry[V]{value: v, expires: now.Add(ttl)}
}
