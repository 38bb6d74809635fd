package framework

import (
	"fmt"
	"sync"
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
// Writes happen in PreFilter/PreScore (serial); reads in Filter/Score run in parallel.
type CycleState struct {
	mu      sync.RWMutex
	storage map[StateKey]StateData
	// SkipFilterPlugins and SkipScorePlugins are the plugins that returned Skip
	// from PreFilter or PreScore in this cycle.
	SkipFilterPlugins map[string]bool
	SkipScorePlugins  map[string]bool
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{storage: map[StateKey]StateData{}, SkipFilterPlugins: map[string]bool{}, SkipScorePlugins: map[string]bool{}}
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.mu.Lock()
	c.storage[key] = data
	c.mu.Unlock()
}

// Read returns the data under key, or an error naming the key.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if d, ok := c.storage[key]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("cycle state: no data for key %q", key)
}

// Clone copies the state and every entry.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := NewCycleState()
	for k, v := range c.storage {
		out.storage[k] = v.Clone()
	}
	for k, v := range c.SkipFilterPlugins {
		out.SkipFilterPlugins[k] = v
	}
	for k, v := range c.SkipScorePlugins {
		out.SkipScorePlugins[k] = v
	}
	return out
}
