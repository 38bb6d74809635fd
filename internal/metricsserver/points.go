package metricsserver

import (
	"sort"
	"time"
)

// series is the last two samples of one node or container.
type series struct {
	prev, last Sample
	hasPrev    bool
}

// PodKey names a pod.
type PodKey struct{ Namespace, Name string }

// Usage is a node's or container's usage over [Time-Window, Time].
type Usage struct {
	Time   time.Time
	Window time.Duration
	// CPUNanoCores is the CPU rate in billionths of a core; Memory the working set in bytes.
	CPUNanoCores uint64
	Memory       uint64
}

// ContainerUsage is one container's usage.
type ContainerUsage struct {
	Name string
	Usage
}

// Points holds the samples of the latest scrape cycles and computes rates from them, as
// metrics-server's storage does: a rate needs two samples of the same series, a counter that went
// back or a container that restarted starts the series again, and a container that started after
// its node's previous scrape counts from its start time at zero CPU. It does no I/O and is not
// safe for concurrent use.
type Points struct {
	nodes map[string]*series
	pods  map[PodKey]map[string]*series
	// podNode is the node each pod was last seen on.
	podNode map[PodKey]string
}

// NewPoints returns empty points.
func NewPoints() *Points {
	return &Points{nodes: map[string]*series{}, pods: map[PodKey]map[string]*series{}, podNode: map[PodKey]string{}}
}

// next is the series after old when s arrives: s follows the last sample when it is newer and
// its counter did not go back (and, for containers, the container did not restart).
func next(old *series, s Sample, prevScrape time.Time) *series {
	if old != nil && !s.Time.After(old.last.Time) {
		return old // the same (or an older) reading again
	}
	if old != nil && s.CPU >= old.last.CPU && s.StartTime.Equal(old.last.StartTime) {
		return &series{prev: old.last, last: s, hasPrev: true}
	}
	out := &series{last: s}
	if !s.StartTime.IsZero() && !prevScrape.IsZero() && s.StartTime.After(prevScrape) && s.StartTime.Before(s.Time) {
		// Started since the node was last scraped: its whole usage is since its start.
		out.prev, out.hasPrev = Sample{Time: s.StartTime, StartTime: s.StartTime}, true
	}
	return out
}

// Store takes one scrape cycle's batches. Nodes that are not in batches (not Ready, or their
// scrape failed) are dropped with their pods, so that stale usage is never served.
func (p *Points) Store(batches []Batch) {
	nodes := map[string]*series{}
	pods := map[PodKey]map[string]*series{}
	podNode := map[PodKey]string{}
	for _, b := range batches {
		var prevScrape time.Time
		if old := p.nodes[b.Node]; old != nil {
			prevScrape = old.last.Time
		}
		if b.NodeSample != nil {
			nodes[b.Node] = next(p.nodes[b.Node], *b.NodeSample, time.Time{})
		}
		for key, s := range b.Containers {
			pk := PodKey{Namespace: key.Namespace, Name: key.Pod}
			var old *series
			if p.podNode[pk] == b.Node {
				old = p.pods[pk][key.Container]
			}
			if pods[pk] == nil {
				pods[pk] = map[string]*series{}
			}
			pods[pk][key.Container] = next(old, s, prevScrape)
			podNode[pk] = b.Node
		}
	}
	p.nodes, p.pods, p.podNode = nodes, pods, podNode
}

func (s *series) usage() (Usage, bool) {
	if s == nil || !s.hasPrev {
		return Usage{}, false
	}
	window := s.last.Time.Sub(s.prev.Time)
	if window <= 0 {
		return Usage{}, false
	}
	return Usage{
		Time: s.last.Time, Window: window, Memory: s.last.Memory,
		CPUNanoCores: uint64((s.last.CPU - s.prev.CPU) / window.Seconds() * 1e9),
	}, true
}

// Node is a node's usage; false until it has two samples.
func (p *Points) Node(name string) (Usage, bool) { return p.nodes[name].usage() }

// Nodes lists the nodes with usage, sorted.
func (p *Points) Nodes() []string {
	var out []string
	for name, s := range p.nodes {
		if _, ok := s.usage(); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Pod is a pod's containers' usage (sorted by name), its time (the latest container's) and window
// (the longest); false unless every container of the pod has a rate.
func (p *Points) Pod(key PodKey) (time.Time, time.Duration, []ContainerUsage, bool) {
	containers := p.pods[key]
	if len(containers) == 0 {
		return time.Time{}, 0, nil, false
	}
	var at time.Time
	var window time.Duration
	out := make([]ContainerUsage, 0, len(containers))
	for name, s := range containers {
		u, ok := s.usage()
		if !ok {
			return time.Time{}, 0, nil, false
		}
		if u.Time.After(at) {
			at = u.Time
		}
		if u.Window > window {
			window = u.Window
		}
		out = append(out, ContainerUsage{Name: name, Usage: u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return at, window, out, true
}

// Pods lists the pods with samples, sorted by namespace and name.
func (p *Points) Pods() []PodKey {
	out := make([]PodKey, 0, len(p.pods))
	for k := range p.pods {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
