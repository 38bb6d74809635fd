package cache

import (
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

type podState struct {
	pod *v1.Pod
	// assumed is true until the informer confirms the binding.
	assumed bool
	// bindingFinished is set once the Binding call returned.
	bindingFinished bool
}

// Cache is safe for concurrent use.
type Cache struct {
	mu         sync.Mutex
	nodes      map[string]*framework.NodeInfo
	nodeNames  []string // sorted, only nodes whose Node object is known
	pods       map[types.UID]*podState
	generation int64
	// imagesGeneration changes when any node's image list may have changed.
	imagesGeneration int64
	// dirty holds nodes changed since the last UpdateSnapshot, so a cycle
	// copies only those instead of scanning every node.
	dirty          map[string]struct{}
	nodeSetChanged bool
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{nodes: map[string]*framework.NodeInfo{}, pods: map[types.UID]*podState{}, dirty: map[string]struct{}{}}
}

func (c *Cache) bump(ni *framework.NodeInfo) {
	c.generation++
	ni.Generation = c.generation
	if n := ni.Node(); n != nil {
		c.dirty[n.Name] = struct{}{}
	}
}

func (c *Cache) nodeInfo(name string) *framework.NodeInfo {
	ni, ok := c.nodes[name]
	if !ok {
		ni = framework.NewNodeInfo()
		c.nodes[name] = ni
	}
	return ni
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni := c.nodeInfo(node.Name)
	if ni.Node() == nil {
		i, _ := slices.BinarySearch(c.nodeNames, node.Name)
		c.nodeNames = slices.Insert(c.nodeNames, i, node.Name)
		c.nodeSetChanged = true
	}
	ni.SetNode(node)
	c.imagesGeneration++
	c.bump(ni)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(_, node *v1.Node) { c.AddNode(node) }

// RemoveNode removes a node; its pods stay counted until they are deleted.
func (c *Cache) RemoveNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni, ok := c.nodes[node.Name]
	if !ok {
		return
	}
	if i, found := slices.BinarySearch(c.nodeNames, node.Name); found {
		c.nodeNames = slices.Delete(c.nodeNames, i, i+1)
	}
	if len(ni.Pods) == 0 {
		delete(c.nodes, node.Name)
	} else {
		ni.RemoveNode()
	}
	c.imagesGeneration++
	c.generation++
	c.nodeSetChanged = true
	delete(c.dirty, node.Name)
}

// AssumePod counts pod (with spec.nodeName set) on its node before it is bound.
func (c *Cache) AssumePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("assume pod %s/%s: already in the cache", pod.Namespace, pod.Name)
	}
	c.addPodLocked(pod)
	c.pods[pod.UID] = &podState{pod: pod, assumed: true}
	return nil
}

// FinishBinding records that the Binding call for an assumed pod returned.
func (c *Cache) FinishBinding(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok && ps.assumed {
		ps.bindingFinished = true
	}
}

// ForgetPod undoes AssumePod after a failed bind.
func (c *Cache) ForgetPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if !ok {
		return nil
	}
	if !ps.assumed {
		return fmt.Errorf("forget pod %s/%s: it was already confirmed bound", pod.Namespace, pod.Name)
	}
	delete(c.pods, pod.UID)
	return c.removePodLocked(ps.pod)
}

// AddPod records a pod the informer reports as bound, confirming an assumed copy.
func (c *Cache) AddPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok {
		// Confirmation of an assumed pod (or a duplicate add): replace the copy.
		_ = c.removePodLocked(ps.pod)
	}
	c.addPodLocked(pod)
	c.pods[pod.UID] = &podState{pod: pod}
}

// UpdatePod replaces a bound pod's copy (its requests may have changed).
func (c *Cache) UpdatePod(_, pod *v1.Pod) { c.AddPod(pod) }

// RemovePod forgets a deleted pod.
func (c *Cache) RemovePod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if !ok {
		return
	}
	delete(c.pods, pod.UID)
	_ = c.removePodLocked(ps.pod)
}

// IsAssumedPod reports whether pod is assumed and not yet confirmed.
func (c *Cache) IsAssumedPod(pod *v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	return ok && ps.assumed
}

// Has reports whether the cache counts pod on a node (assumed or bound).
func (c *Cache) Has(pod *v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pods[pod.UID]
	return ok
}

// Counts returns the numbers of known nodes, counted pods and assumed pods.
func (c *Cache) Counts() (nodes, pods, assumed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ps := range c.pods {
		if ps.assumed {
			assumed++
		}
	}
	return len(c.nodeNames), len(c.pods), assumed
}

func (c *Cache) addPodLocked(pod *v1.Pod) {
	ni := c.nodeInfo(pod.Spec.NodeName)
	ni.AddPod(pod)
	c.bump(ni)
}

func (c *Cache) removePodLocked(pod *v1.Pod) error {
	ni, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return fmt.Errorf("remove pod %s/%s: node %q not in cache", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	if err := ni.RemovePod(pod); err != nil {
		return err
	}
	if ni.Node() == nil && len(ni.Pods) == 0 {
		delete(c.nodes, pod.Spec.NodeName)
		c.generation++
		return nil
	}
	c.bump(ni)
	return nil
}

// maxReusedDirty is the most changed nodes whose set UpdateSnapshot clears for reuse rather than
// replaces.
const maxReusedDirty = 64

// UpdateSnapshot brings snap up to date, copying only nodes changed since
// the previous update. Incremental updates assume one long-lived snapshot per
// cache (the scheduler's); a fresh snapshot gets a full copy.
func (c *Cache) UpdateSnapshot(snap *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if snap.generation == c.generation {
		return
	}
	full := snap.generation < 0 || snap.owner != c
	imagesChanged := snap.imagesGeneration != c.imagesGeneration
	affinityChanged := false
	if full {
		clear(snap.nodeInfoMap)
		snap.podIndex = framework.NewPodIndex()
		for _, name := range c.nodeNames {
			clone := c.nodes[name].Clone()
			snap.nodeInfoMap[name] = clone
			snap.podIndex.AddNode(clone)
		}
	} else {
		for name := range c.dirty {
			ni, ok := c.nodes[name]
			if !ok || ni.Node() == nil {
				continue
			}
			old := snap.nodeInfoMap[name]
			clone := ni.Clone()
			snap.nodeInfoMap[name] = clone
			if old != nil {
				snap.podIndex.RemoveNode(old)
			}
			snap.podIndex.AddNode(clone)
			if old == nil || len(old.PodsWithAffinity) > 0 || len(clone.PodsWithAffinity) > 0 {
				affinityChanged = true
			}
			if idx, ok := snap.index[name]; ok && !c.nodeSetChanged {
				snap.nodeInfoList[idx] = clone
			}
			if !imagesChanged {
				snap.applyImageCountsTo(clone)
			}
		}
		if c.nodeSetChanged {
			for name := range snap.nodeInfoMap {
				if ni, ok := c.nodes[name]; !ok || ni.Node() == nil {
					snap.podIndex.RemoveNode(snap.nodeInfoMap[name])
					delete(snap.nodeInfoMap, name)
				}
			}
		}
	}
	if full || c.nodeSetChanged {
		snap.rebuildLists(c.nodeNames)
	} else if affinityChanged {
		snap.rebuildAffinityLists()
	}
	if full || imagesChanged {
		snap.imagesGeneration = c.imagesGeneration
		snap.imageNodeCounts = countImages(snap.nodeInfoList)
		snap.applyImageCounts()
	}
	if len(c.dirty) > maxReusedDirty {
		// A map keeps the room it once needed, and ranging over it costs that room: after a
		// burst (every node added at start), a cleared map would slow every later cycle.
		c.dirty = map[string]struct{}{}
	} else {
		clear(c.dirty)
	}
	c.nodeSetChanged = false
	snap.owner = c
	snap.generation = c.generation
}

func countImages(nodes []*framework.NodeInfo) map[string]int {
	counts := map[string]int{}
	for _, ni := range nodes {
		for name := range ni.ImageStates {
			counts[name]++
		}
	}
	return counts
}
