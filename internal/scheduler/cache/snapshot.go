package cache

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Snapshot is an immutable-during-a-cycle view of all nodes.
type Snapshot struct {
	nodeInfoMap  map[string]*framework.NodeInfo
	nodeInfoList []*framework.NodeInfo
	// The affinity lists are built when first asked for after a change (affinityStale): with a
	// pod index the plugins never ask, and rebuilding them visited every node each time a pod
	// with affinity terms landed. affinityMu guards them, since preemption's parallel
	// simulations may ask at once.
	affinityMu                   sync.Mutex
	affinityStale                bool
	havePodsWithAffinity         []*framework.NodeInfo
	havePodsWithRequiredAntiAff  []*framework.NodeInfo
	imageNodeCounts              map[string]int
	generation, imagesGeneration int64
	// index maps node names to positions in nodeInfoList.
	index map[string]int
	// owner is the cache this snapshot follows incrementally.
	owner *Cache
	// podIndex holds the affinity and spreading counts over nodeInfoList (nil in derived
	// snapshots, where plugins fall back to scanning).
	podIndex *framework.PodIndex
}

var _ framework.NodeInfoLister = &Snapshot{}

// NewEmptySnapshot returns a snapshot to be filled by Cache.UpdateSnapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*framework.NodeInfo{}, generation: -1, imagesGeneration: -1}
}

// NewSnapshot builds a snapshot directly from objects (tests, explanations).
func NewSnapshot(pods []*v1.Pod, nodes []*v1.Node) *Snapshot {
	c := New()
	for _, n := range nodes {
		c.AddNode(n)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			c.AddPod(p)
		}
	}
	s := NewEmptySnapshot()
	c.UpdateSnapshot(s)
	return s
}

// WithNodeInfo returns a snapshot sharing s's nodes except that ni replaces its
// node (preemption simulates victims' removal this way).
func (s *Snapshot) WithNodeInfo(ni *framework.NodeInfo) *Snapshot {
	out := &Snapshot{nodeInfoMap: make(map[string]*framework.NodeInfo, len(s.nodeInfoMap)), imageNodeCounts: s.imageNodeCounts}
	names := make([]string, 0, len(s.nodeInfoList))
	for _, n := range s.nodeInfoList {
		out.nodeInfoMap[n.Node().Name] = n
		names = append(names, n.Node().Name)
	}
	out.nodeInfoMap[ni.Node().Name] = ni
	out.rebuildLists(names)
	return out
}

func (s *Snapshot) rebuildLists(order []string) {
	s.nodeInfoList = s.nodeInfoList[:0]
	if s.index == nil {
		s.index = make(map[string]int, len(order))
	} else {
		clear(s.index)
	}
	for _, name := range order {
		ni, ok := s.nodeInfoMap[name]
		if !ok {
			continue
		}
		s.index[name] = len(s.nodeInfoList)
		s.nodeInfoList = append(s.nodeInfoList, ni)
	}
	s.rebuildAffinityLists()
}

// rebuildAffinityLists marks the affinity lists out of date; affinityLists rebuilds them.
func (s *Snapshot) rebuildAffinityLists() {
	s.affinityMu.Lock()
	s.affinityStale = true
	s.affinityMu.Unlock()
}

func (s *Snapshot) affinityLists() (withAffinity, withRequiredAntiAffinity []*framework.NodeInfo) {
	s.affinityMu.Lock()
	defer s.affinityMu.Unlock()
	if s.affinityStale {
		s.havePodsWithAffinity = s.havePodsWithAffinity[:0]
		s.havePodsWithRequiredAntiAff = s.havePodsWithRequiredAntiAff[:0]
		for _, ni := range s.nodeInfoList {
			if len(ni.PodsWithAffinity) > 0 {
				s.havePodsWithAffinity = append(s.havePodsWithAffinity, ni)
			}
			if len(ni.PodsWithRequiredAntiAffinity) > 0 {
				s.havePodsWithRequiredAntiAff = append(s.havePodsWithRequiredAntiAff, ni)
			}
		}
		s.affinityStale = false
	}
	return s.havePodsWithAffinity, s.havePodsWithRequiredAntiAff
}

func (s *Snapshot) applyImageCounts() {
	for _, ni := range s.nodeInfoList {
		s.applyImageCountsTo(ni)
	}
}

func (s *Snapshot) applyImageCountsTo(ni *framework.NodeInfo) {
	for name, st := range ni.ImageStates {
		st.NumNodes = s.imageNodeCounts[name]
	}
}

// List returns every node, in name order.
func (s *Snapshot) List() []*framework.NodeInfo { return s.nodeInfoList }

// HavePodsWithAffinityList returns nodes running pods with any affinity term.
func (s *Snapshot) HavePodsWithAffinityList() []*framework.NodeInfo {
	list, _ := s.affinityLists()
	return list
}

// HavePodsWithRequiredAntiAffinityList returns nodes running pods with required anti-affinity.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() []*framework.NodeInfo {
	_, list := s.affinityLists()
	return list
}

// Get returns one node.
func (s *Snapshot) Get(name string) (*framework.NodeInfo, error) {
	if ni, ok := s.nodeInfoMap[name]; ok {
		return ni, nil
	}
	return nil, fmt.Errorf("node %q not found in snapshot", name)
}

// PodIndex returns the snapshot's affinity and spreading counts, or nil.
func (s *Snapshot) PodIndex() *framework.PodIndex { return s.podIndex }

// NumNodes is the number of nodes.
func (s *Snapshot) NumNodes() int { return len(s.nodeInfoList) }
