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
// Writes happen in PreFilter/PreScore (serial); reads in Filter/Score run in parallel, once per
// node and plugin: storage is a sync.Map (as in kube-scheduler) because its reads share no
// written memory, where every read of an RWMutex-guarded map wrote the lock's reader count, a
// cache line the filtering workers passed back and forth.
type CycleState struct {
	storage sync.Map // StateKey -> StateData
	// SkipFilterPlugins and SkipScorePlugins are the plugins that returned Skip
	// from PreFilter or PreScore in this cycle.
	SkipFilterPlugins map[string]bool
	SkipScorePlugins  map[string]bool
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{SkipFilterPlugins: map[string]bool{}, SkipScorePlugins: map[string]bool{}}
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.storage.Store(key, data)
}

// Read returns the data under key, or an error naming the key.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	if d, ok := c.storage.Load(key); ok {
		return d.(StateData), nil
	}
	return nil, fmt.Errorf("cycle state: no data for key %q", key)
}

// Clone copies the state and every entry.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	out := NewCycleState()
	c.storage.Range(func(k, v any) bool {
		out.storage.Store(k, v.(StateData).Clone())
		return true
	})
	for k, v := range c.SkipFilterPlugins {
		out.SkipFilterPlugins[k] = v
	}
	for k, v := range c.SkipScorePlugins {
		out.SkipScorePlugins[k] = v
	}
	return out
}
