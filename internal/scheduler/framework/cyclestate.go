package framework

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// StateKey names a plugin's entry in the CycleState.
type StateKey string

// StateData is what a plugin keeps between extension points of one cycle.
// Clone must return a copy that can be changed without affecting the original
// (preemption simulates on clones).
type StateData interface {
	Clone() StateData
}

// CycleState carries plugin data through one scheduling cycle of one pod.
// Writes happen in PreFilter/PreScore (serial); reads in Filter/Score run in parallel, once per
// node and plugin. The entries are a small copy-on-write list behind an atomic pointer: a read
// writes no shared memory (an RWMutex's reader count was a cache line the filtering workers
// passed back and forth) and hashes nothing (a sync.Map read hashed the key and compared
// interfaces, 3 % of the process's CPU while the scheduler bound pods); a profile has about ten
// keys, fewer than a hash is worth.
type CycleState struct {
	mu      sync.Mutex // serializes writers
	entries atomic.Pointer[[]stateEntry]
	// SkipFilterPlugins and SkipScorePlugins are the plugins that returned Skip
	// from PreFilter or PreScore in this cycle.
	SkipFilterPlugins map[string]bool
	SkipScorePlugins  map[string]bool
}

// stateEntry is one key's data; a published list of entries is never changed.
type stateEntry struct {
	key  StateKey
	data StateData
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{SkipFilterPlugins: map[string]bool{}, SkipScorePlugins: map[string]bool{}}
}

// list is the current entries (nil when none were written).
func (c *CycleState) list() []stateEntry {
	if p := c.entries.Load(); p != nil {
		return *p
	}
	return nil
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.list()
	next := make([]stateEntry, len(old), len(old)+1)
	copy(next, old)
	i := slices.IndexFunc(next, func(e stateEntry) bool { return e.key == key })
	if i >= 0 {
		next[i].data = data
	} else {
		next = append(next, stateEntry{key: key, data: data})
	}
	c.entries.Store(&next)
}

// Read returns the data under key, or an error naming the key.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	for _, e := range c.list() {
		if e.key == key {
			return e.data, nil
		}
	}
	return nil, fmt.Errorf("cycle state: no data for key %q", key)
}

// Clone copies the state and every entry.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	out := NewCycleState()
	old := c.list()
	if len(old) > 0 {
		entries := make([]stateEntry, len(old))
		for i, e := range old {
			entries[i] = stateEntry{key: e.key, data: e.data.Clone()}
		}
		out.entries.Store(&entries)
	}
	for k, v := range c.SkipFilterPlugins {
		out.SkipFilterPlugins[k] = v
	}
	for k, v := range c.SkipScorePlugins {
		out.SkipScorePlugins[k] = v
	}
	return out
}
