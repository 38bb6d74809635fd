// Package interpodaffinity implements InterPodAffinity: required pod affinity
// and anti-affinity (of the incoming pod, and existing pods' anti-affinity
// against it) filter nodes by topology domain; preferred terms (and existing
// pods' terms) score them.
package interpodaffinity

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	listersv1 "k8s.io/client-go/listers/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Name is the plugin name.
const Name = "InterPodAffinity"

// Kubernetes' messages.
const (
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
)

const (
	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
)

// Args are the plugin's pluginConfig args.
type Args struct {
	// HardPodAffinityWeight scores existing pods' required affinity towards the
	// incoming pod (Kubernetes' default 1).
	HardPodAffinityWeight *int32 `json:"hardPodAffinityWeight,omitempty"`
}

// counts maps topologyKey -> value -> number of matching pods.
type counts map[string]map[string]int64

func (c counts) add(key, value string, n int64) {
	m, ok := c[key]
	if !ok {
		m = map[string]int64{}
		c[key] = m
	}
	m[value] += n
}

func (c counts) get(key, value string) int64 { return c[key][value] }

func (c counts) merge(o counts) {
	for k, vs := range o {
		for v, n := range vs {
			c.add(k, v, n)
		}
	}
}

type preFilterState struct {
	existingAntiAffinity counts
	affinity             counts
	antiAffinity         counts
	podInfo              *framework.PodInfo
	nsLabels             labels.Set
}

// Clone copies the counts (preemption changes them per simulated node).
func (s *preFilterState) Clone() framework.StateData {
	out := *s
	out.existingAntiAffinity, out.affinity, out.antiAffinity = s.existingAntiAffinity.clone(), s.affinity.clone(), s.antiAffinity.clone()
	return &out
}

func (c counts) clone() counts {
	out := make(counts, len(c))
	for k, vs := range c {
		m := make(map[string]int64, len(vs))
		for v, n := range vs {
			m[v] = n
		}
		out[k] = m
	}
	return out
}

// update adds (sign 1) or removes (sign -1) one existing pod on node to the counts PreFilter made.
func (s *preFilterState) update(existing *framework.PodInfo, node *v1.Node, sign int64) {
	pod := s.podInfo.Pod
	for _, t := range existing.RequiredAntiAffinityTerms {
		if v, ok := node.Labels[t.TopologyKey]; ok && t.Matches(pod, s.nsLabels) {
			s.existingAntiAffinity.addOrDrop(t.TopologyKey, v, sign)
		}
	}
	if len(s.podInfo.RequiredAffinityTerms) > 0 && matchesAll(s.podInfo.RequiredAffinityTerms, existing.Pod) {
		for _, t := range s.podInfo.RequiredAffinityTerms {
			if v, ok := node.Labels[t.TopologyKey]; ok {
				s.affinity.addOrDrop(t.TopologyKey, v, sign)
			}
		}
	}
	for _, t := range s.podInfo.RequiredAntiAffinityTerms {
		if v, ok := node.Labels[t.TopologyKey]; ok && t.Matches(existing.Pod, nil) {
			s.antiAffinity.addOrDrop(t.TopologyKey, v, sign)
		}
	}
}

// addOrDrop adds n and drops entries that reach zero, so the counts look as a fresh PreFilter's.
func (c counts) addOrDrop(key, value string, n int64) {
	c.add(key, value, n)
	if c[key][value] == 0 {
		delete(c[key], value)
		if len(c[key]) == 0 {
			delete(c, key)
		}
	}
}

// PreFilterExtensions lets preemption add and remove pods without a new PreFilter.
func (pl *InterPodAffinity) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod counts podToAdd on nodeInfo's node.
func (pl *InterPodAffinity) AddPod(_ context.Context, state *framework.CycleState, _ *v1.Pod, podToAdd *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	return updateState(state, podToAdd, nodeInfo, 1)
}

// RemovePod uncounts podToRemove from nodeInfo's node.
func (pl *InterPodAffinity) RemovePod(_ context.Context, state *framework.CycleState, _ *v1.Pod, podToRemove *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	return updateState(state, podToRemove, nodeInfo, -1)
}

func updateState(state *framework.CycleState, pi *framework.PodInfo, ni *framework.NodeInfo, sign int64) *framework.Status {
	d, err := state.Read(preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	d.(*preFilterState).update(pi, ni.Node(), sign)
	return nil
}

type preScoreState struct {
	scores counts
	// views are label groups' pod counts per domain, read from the snapshot's index where Score
	// needs them instead of summed into scores: copying a group's hostname counts (one per node
	// the group runs on) into a fresh map each cycle was most of PreScore's time. They stay valid
	// for the cycle, during which the snapshot does not change.
	views []domainView
}

// domainView is weight times a label group's pods per value of key.
type domainView struct {
	key    string
	counts map[string]int64
	weight int64
}

func (s *preScoreState) Clone() framework.StateData { return s }

// InterPodAffinity is the plugin.
type InterPodAffinity struct {
	hardWeight int64
	namespaces listersv1.NamespaceLister
	parallel   framework.Parallelizer
}

var (
	_ framework.PreFilterPlugin   = &InterPodAffinity{}
	_ framework.FilterPlugin      = &InterPodAffinity{}
	_ framework.PreScorePlugin    = &InterPodAffinity{}
	_ framework.ScorePlugin       = &InterPodAffinity{}
	_ framework.ScoreExtensions   = &InterPodAffinity{}
	_ framework.EnqueueExtensions = &InterPodAffinity{}
)

// New builds the plugin. Without an informer factory, namespaceSelector
// terms only match through their explicit namespaces list.
func New(raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	args := Args{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("decode %s args: %w", Name, err)
		}
	}
	pl := &InterPodAffinity{hardWeight: 1, parallel: framework.NewParallelizer(1)}
	if args.HardPodAffinityWeight != nil {
		if w := *args.HardPodAffinityWeight; w < 0 || w > 100 {
			return nil, fmt.Errorf("%s: hardPodAffinityWeight: must be in [0, 100], got %d", Name, w)
		}
		pl.hardWeight = int64(*args.HardPodAffinityWeight)
	}
	if h != nil {
		pl.parallel = h.Parallelizer()
		if f := h.SharedInformerFactory(); f != nil {
			pl.namespaces = f.Core().V1().Namespaces().Lister()
		}
	}
	return pl, nil
}

// Name returns the plugin name.
func (*InterPodAffinity) Name() string { return Name }

func (pl *InterPodAffinity) namespaceLabels(ns string) labels.Set {
	if pl.namespaces == nil {
		return labels.Set{}
	}
	n, err := pl.namespaces.Get(ns)
	if err != nil {
		return labels.Set{}
	}
	return labels.Set(n.Labels)
}

// resolveNamespaces turns namespaceSelectors into explicit namespace sets, so
// matching existing pods needs no per-pod namespace lookup.
func (pl *InterPodAffinity) resolveNamespaces(terms []framework.AffinityTerm) {
	for i := range terms {
		t := &terms[i]
		if t.NamespaceSelector == labels.Nothing() {
			continue
		}
		if pl.namespaces != nil {
			if list, err := pl.namespaces.List(t.NamespaceSelector); err == nil {
				for _, n := range list {
					t.Namespaces.Insert(n.Name)
				}
			}
		}
		t.NamespaceSelector = labels.Nothing()
	}
}

func (pl *InterPodAffinity) resolveWeighted(terms []framework.WeightedAffinityTerm) {
	for i := range terms {
		one := []framework.AffinityTerm{terms[i].AffinityTerm}
		pl.resolveNamespaces(one)
		terms[i].AffinityTerm = one[0]
	}
}

// PreFilter counts, per topology domain, the pods matching the incoming
// pod's terms and the existing pods whose anti-affinity matches it.
func (pl *InterPodAffinity) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes framework.NodeInfoLister) *framework.Status {
	pi := framework.NewPodInfo(pod)
	pl.resolveNamespaces(pi.RequiredAffinityTerms)
	pl.resolveNamespaces(pi.RequiredAntiAffinityTerms)
	s := &preFilterState{existingAntiAffinity: counts{}, affinity: counts{}, antiAffinity: counts{}, podInfo: pi, nsLabels: pl.namespaceLabels(pod.Namespace)}
	ix := framework.IndexOf(nodes)
	if ix != nil {
		ix.Terms(framework.RequiredAntiAffinity, func(tc *framework.TermCount) {
			if tc.Term.Matches(pod, s.nsLabels) {
				for v, n := range tc.Domains {
					s.existingAntiAffinity.add(tc.Term.TopologyKey, v, n)
				}
			}
		})
	} else {
		for _, ni := range nodes.HavePodsWithRequiredAntiAffinityList() {
			node := ni.Node()
			for _, existing := range ni.PodsWithRequiredAntiAffinity {
				for _, t := range existing.RequiredAntiAffinityTerms {
					if v, ok := node.Labels[t.TopologyKey]; ok && t.Matches(pod, s.nsLabels) {
						s.existingAntiAffinity.add(t.TopologyKey, v, 1)
					}
				}
			}
		}
	}
	if len(pi.RequiredAffinityTerms) == 0 && len(pi.RequiredAntiAffinityTerms) == 0 {
		if len(s.existingAntiAffinity) == 0 {
			return framework.NewStatus(framework.Skip)
		}
		state.Write(preFilterStateKey, s)
		return nil
	}
	if ix != nil {
		countIncomingTermsIndexed(ix, nodes.List(), pi, s)
		state.Write(preFilterStateKey, s)
		return nil
	}
	all := nodes.List()
	var mu sync.Mutex
	pl.parallel.Until(ctx, len(all), func(i int) {
		node := all[i].Node()
		aff, anti := counts{}, counts{}
		for _, existing := range all[i].Pods {
			if len(pi.RequiredAffinityTerms) > 0 && matchesAll(pi.RequiredAffinityTerms, existing.Pod) {
				for _, t := range pi.RequiredAffinityTerms {
					if v, ok := node.Labels[t.TopologyKey]; ok {
						aff.add(t.TopologyKey, v, 1)
					}
				}
			}
			for _, t := range pi.RequiredAntiAffinityTerms {
				if v, ok := node.Labels[t.TopologyKey]; ok && t.Matches(existing.Pod, nil) {
					anti.add(t.TopologyKey, v, 1)
				}
			}
		}
		if len(aff)+len(anti) > 0 {
			mu.Lock()
			s.affinity.merge(aff)
			s.antiAffinity.merge(anti)
			mu.Unlock()
		}
	})
	state.Write(preFilterStateKey, s)
	return nil
}

// countIncomingTermsIndexed is PreFilter's count of existing pods matching the incoming pod's
// required terms, from the snapshot's label groups: each group is matched once.
func countIncomingTermsIndexed(ix *framework.PodIndex, nodes []*framework.NodeInfo, pi *framework.PodInfo, s *preFilterState) {
	ix.EnsureKeys(nodes, termKeys(pi.RequiredAffinityTerms, pi.RequiredAntiAffinityTerms)...)
	ix.Groups(func(g *framework.LabelGroup) {
		if len(pi.RequiredAffinityTerms) > 0 && groupMatchesAll(pi.RequiredAffinityTerms, g) {
			for _, t := range pi.RequiredAffinityTerms {
				for v, n := range g.GroupCounts(t.TopologyKey) {
					s.affinity.add(t.TopologyKey, v, n)
				}
			}
		}
		for i := range pi.RequiredAntiAffinityTerms {
			t := &pi.RequiredAntiAffinityTerms[i]
			if g.Matches(t) {
				for v, n := range g.GroupCounts(t.TopologyKey) {
					s.antiAffinity.add(t.TopologyKey, v, n)
				}
			}
		}
	})
}

func termKeys(lists ...[]framework.AffinityTerm) []string {
	var keys []string
	for _, l := range lists {
		for _, t := range l {
			keys = append(keys, t.TopologyKey)
		}
	}
	return keys
}

func groupMatchesAll(terms []framework.AffinityTerm, g *framework.LabelGroup) bool {
	for i := range terms {
		if !g.Matches(&terms[i]) {
			return false
		}
	}
	return true
}

func matchesAll(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	for i := range terms {
		if !terms[i].Matches(pod, nil) {
			return false
		}
	}
	return true
}

// Filter checks the node's domains against the counts.
func (pl *InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	d, err := state.Read(preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s := d.(*preFilterState)
	if !satisfiesAffinity(s, ni) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	for _, t := range s.podInfo.RequiredAntiAffinityTerms {
		if v, ok := ni.Label(t.TopologyKey); ok && s.antiAffinity.get(t.TopologyKey, v) > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	if len(s.existingAntiAffinity) == 0 {
		return nil
	}
	for key, values := range s.existingAntiAffinity {
		if v, ok := ni.Label(key); ok && values[v] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
		}
	}
	return nil
}

// satisfiesAffinity: every term's domain on this node holds a matching pod;
// or, when no pod anywhere matches, the pod matches its own terms (the first
// pod of a group that wants to be together may go anywhere with the keys).
func satisfiesAffinity(s *preFilterState, ni *framework.NodeInfo) bool {
	terms := s.podInfo.RequiredAffinityTerms
	if len(terms) == 0 {
		return true
	}
	ok := true
	for _, t := range terms {
		v, has := ni.Label(t.TopologyKey)
		if !has {
			return false
		}
		if s.affinity.get(t.TopologyKey, v) <= 0 {
			ok = false
		}
	}
	if ok {
		return true
	}
	return len(s.affinity) == 0 && matchesAllWithNs(terms, s.podInfo.Pod, s.nsLabels)
}

func matchesAllWithNs(terms []framework.AffinityTerm, pod *v1.Pod, ns labels.Set) bool {
	for i := range terms {
		if !terms[i].Matches(pod, ns) {
			return false
		}
	}
	return true
}

// PreScore sums preferred (and existing pods' required-affinity) weights per domain.
func (pl *InterPodAffinity) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo, all framework.NodeInfoLister) *framework.Status {
	pi := framework.NewPodInfo(pod)
	pl.resolveWeighted(pi.PreferredAffinityTerms)
	pl.resolveWeighted(pi.PreferredAntiAffinityTerms)
	hasPreferred := len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
	nsLabels := pl.namespaceLabels(pod.Namespace)
	var scores counts
	var views []domainView
	if ix := framework.IndexOf(all); ix != nil {
		scores, views = pl.preScoreIndexed(ix, all.List(), pi, nsLabels, hasPreferred)
	} else {
		scores = pl.preScoreScan(ctx, all, pi, nsLabels, hasPreferred)
	}
	if len(scores) == 0 && len(views) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreStateKey, &preScoreState{scores: scores, views: views})
	return nil
}

// preScoreIndexed sums the same weights as preScoreScan from the snapshot's index: the incoming
// pod's preferred terms are matched once per label group, existing pods' terms once per
// distinct term.
func (pl *InterPodAffinity) preScoreIndexed(ix *framework.PodIndex, nodes []*framework.NodeInfo, pi *framework.PodInfo, nsLabels labels.Set, hasPreferred bool) (counts, []domainView) {
	scores := counts{}
	var views []domainView
	view := func(key string, weight int64, m map[string]int64) {
		if len(m) > 0 {
			views = append(views, domainView{key: key, counts: m, weight: weight})
		}
	}
	if hasPreferred {
		var keys []string
		for _, t := range pi.PreferredAffinityTerms {
			keys = append(keys, t.TopologyKey)
		}
		for _, t := range pi.PreferredAntiAffinityTerms {
			keys = append(keys, t.TopologyKey)
		}
		ix.EnsureKeys(nodes, keys...)
		ix.Groups(func(g *framework.LabelGroup) {
			for i := range pi.PreferredAffinityTerms {
				t := &pi.PreferredAffinityTerms[i]
				if t.Weight != 0 && g.Matches(&t.AffinityTerm) {
					view(t.TopologyKey, int64(t.Weight), g.GroupCounts(t.TopologyKey))
				}
			}
			for i := range pi.PreferredAntiAffinityTerms {
				t := &pi.PreferredAntiAffinityTerms[i]
				if t.Weight != 0 && g.Matches(&t.AffinityTerm) {
					view(t.TopologyKey, -int64(t.Weight), g.GroupCounts(t.TopologyKey))
				}
			}
		})
	}
	existing := func(kind framework.TermKind, weight func(tc *framework.TermCount) int64) {
		ix.Terms(kind, func(tc *framework.TermCount) {
			w := weight(tc)
			if w == 0 || !tc.Term.Matches(pi.Pod, nsLabels) {
				return
			}
			for v, n := range tc.Domains {
				scores.add(tc.Term.TopologyKey, v, w*n)
			}
		})
	}
	existing(framework.RequiredAffinity, func(*framework.TermCount) int64 { return pl.hardWeight })
	existing(framework.PreferredAffinity, func(tc *framework.TermCount) int64 { return int64(tc.Weight) })
	existing(framework.PreferredAntiAffinity, func(tc *framework.TermCount) int64 { return -int64(tc.Weight) })
	return scores, views
}

// preScoreScan visits every pod (or, without preferred terms, every pod with affinity terms)
// on every node.
func (pl *InterPodAffinity) preScoreScan(ctx context.Context, all framework.NodeInfoLister, pi *framework.PodInfo, nsLabels labels.Set, hasPreferred bool) counts {
	pod := pi.Pod
	nodes := all.HavePodsWithAffinityList()
	if hasPreferred {
		nodes = all.List()
	}
	scores := counts{}
	var mu sync.Mutex
	pl.parallel.Until(ctx, len(nodes), func(i int) {
		node := nodes[i].Node()
		local := counts{}
		existingPods := nodes[i].PodsWithAffinity
		if hasPreferred {
			existingPods = nodes[i].Pods
		}
		add := func(key string, w int64) {
			if v, ok := node.Labels[key]; ok && w != 0 {
				local.add(key, v, w)
			}
		}
		for _, ep := range existingPods {
			for _, t := range pi.PreferredAffinityTerms {
				if t.Matches(ep.Pod, nil) {
					add(t.TopologyKey, int64(t.Weight))
				}
			}
			for _, t := range pi.PreferredAntiAffinityTerms {
				if t.Matches(ep.Pod, nil) {
					add(t.TopologyKey, -int64(t.Weight))
				}
			}
			for _, t := range ep.RequiredAffinityTerms {
				if pl.hardWeight > 0 && t.Matches(pod, nsLabels) {
					add(t.TopologyKey, pl.hardWeight)
				}
			}
			for _, t := range ep.PreferredAffinityTerms {
				if t.Matches(pod, nsLabels) {
					add(t.TopologyKey, int64(t.Weight))
				}
			}
			for _, t := range ep.PreferredAntiAffinityTerms {
				if t.Matches(pod, nsLabels) {
					add(t.TopologyKey, -int64(t.Weight))
				}
			}
		}
		if len(local) > 0 {
			mu.Lock()
			scores.merge(local)
			mu.Unlock()
		}
	})
	return scores
}

// Score sums the node's domains' scores.
func (pl *InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	ps := d.(*preScoreState)
	var total int64
	// Ranging over even an empty map costs a setup per node; most cycles have only views.
	if len(ps.scores) > 0 {
		for key, values := range ps.scores {
			if v, ok := ni.Label(key); ok {
				total += values[v]
			}
		}
	}
	for i := range ps.views {
		if v, ok := ni.Label(ps.views[i].key); ok {
			total += ps.views[i].weight * ps.views[i].counts[v]
		}
	}
	return total, nil
}

// ScoreExtensions normalizes.
func (pl *InterPodAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps [min, max] onto [0, 100].
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi > lo {
			scores[i].Score = framework.MaxNodeScore * (scores[i].Score - lo) / (hi - lo)
		} else {
			scores[i].Score = 0
		}
	}
	return nil
}

// EventsToRegister: matching pods come and go, node labels and namespace labels change.
func (pl *InterPodAffinity) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.KindAssignedPod, ActionType: framework.All},
		{Resource: framework.KindNode, ActionType: framework.Add | framework.Update},
		{Resource: framework.KindNamespace, ActionType: framework.Add | framework.Update},
	}
}
