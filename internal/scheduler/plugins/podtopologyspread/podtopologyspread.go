// Package podtopologyspread implements PodTopologySpread: DoNotSchedule
// constraints filter nodes whose domain would exceed maxSkew (honouring
// minDomains, nodeAffinityPolicy and nodeTaintsPolicy); ScheduleAnyway
// constraints score nodes in emptier domains higher. Kubernetes' cluster-level
// default constraints are not applied: only the pod's own constraints count.
package podtopologyspread

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/helper"
)

// Name is the plugin name.
const Name = "PodTopologySpread"

// Kubernetes' messages.
const (
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	ErrReasonNodeLabelNotMatch   = ErrReasonConstraintsNotMatch + " (missing required label)"
)

const (
	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
)

type constraint struct {
	maxSkew       int64
	topologyKey   string
	selector      labels.Selector
	minDomains    int64
	honorAffinity bool
	honorTaints   bool
}

func constraintsOf(pod *v1.Pod, when v1.UnsatisfiableConstraintAction) []constraint {
	var out []constraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != when {
			continue
		}
		sel := labels.Nothing()
		if c.LabelSelector != nil {
			if s, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err == nil {
				sel = s
				for _, key := range c.MatchLabelKeys {
					if v, ok := pod.Labels[key]; ok {
						if r, err := labels.NewRequirement(key, "in", []string{v}); err == nil {
							sel = sel.Add(*r)
						}
					}
				}
			}
		}
		cc := constraint{maxSkew: int64(c.MaxSkew), topologyKey: c.TopologyKey, selector: sel, minDomains: 1,
			honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor,
			honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor}
		if c.MinDomains != nil {
			cc.minDomains = int64(*c.MinDomains)
		}
		out = append(out, cc)
	}
	return out
}

// eligible reports whether node's pods count towards constraint c for pod.
func eligible(c *constraint, pod *v1.Pod, node *v1.Node) bool {
	if c.honorAffinity && !helper.PodMatchesNodeSelectorAndAffinity(pod, node) {
		return false
	}
	if c.honorTaints {
		if _, found := helper.FindUntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, helper.DoNotScheduleTaints); found {
			return false
		}
	}
	return true
}

func hasAllKeys(cs []constraint, node *v1.Node) bool {
	for _, c := range cs {
		if _, ok := node.Labels[c.topologyKey]; !ok {
			return false
		}
	}
	return true
}

func countMatching(c *constraint, namespace string, ni *framework.NodeInfo) int64 {
	var n int64
	for _, p := range ni.Pods {
		if p.Pod.Namespace == namespace && p.Pod.DeletionTimestamp == nil && c.selector.Matches(labels.Set(p.Pod.Labels)) {
			n++
		}
	}
	return n
}

// countDomains counts matching pods per domain value of each constraint over
// the eligible nodes carrying every constraint's key: from the snapshot's index
// when every node is eligible, else by visiting every pod.
func countDomains(cs []constraint, pod *v1.Pod, lister framework.NodeInfoLister) []map[string]int64 {
	nodes := lister.List()
	if ix := framework.IndexOf(lister); ix != nil && allNodesEligible(ix, nodes, cs, pod) {
		return countDomainsIndexed(ix, cs, pod)
	}
	return countDomainsScan(cs, pod, nodes)
}

// allNodesEligible: no constraint filters nodes by the pod's node affinity or by taints, and with
// several constraints every node carries every key (hasAllKeys holds everywhere).
func allNodesEligible(ix *framework.PodIndex, nodes []*framework.NodeInfo, cs []constraint, pod *v1.Pod) bool {
	hasNodeAffinity := len(pod.Spec.NodeSelector) > 0 || (pod.Spec.Affinity != nil && pod.Spec.Affinity.NodeAffinity != nil &&
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)
	keys := make([]string, 0, len(cs))
	for i := range cs {
		if cs[i].honorTaints || (cs[i].honorAffinity && hasNodeAffinity) {
			return false
		}
		keys = append(keys, cs[i].topologyKey)
	}
	ix.EnsureKeys(nodes, keys...)
	if len(cs) > 1 {
		total := ix.NumNodes()
		for _, k := range keys {
			if ix.NodesWithKey(k) != total {
				return false
			}
		}
	}
	return true
}

func countDomainsIndexed(ix *framework.PodIndex, cs []constraint, pod *v1.Pod) []map[string]int64 {
	out := make([]map[string]int64, len(cs))
	for i := range cs {
		c := &cs[i]
		m := map[string]int64{}
		ix.Domains(c.topologyKey, func(v string) { m[v] = 0 })
		ix.CountMatching(c.topologyKey, false, func(g *framework.LabelGroup) bool {
			return g.Namespace == pod.Namespace && c.selector.Matches(g.Labels)
		}, func(v string, n int64) { m[v] += n })
		out[i] = m
	}
	return out
}

func countDomainsScan(cs []constraint, pod *v1.Pod, nodes []*framework.NodeInfo) []map[string]int64 {
	out := make([]map[string]int64, len(cs))
	for i := range cs {
		out[i] = map[string]int64{}
	}
	for _, ni := range nodes {
		node := ni.Node()
		if !hasAllKeys(cs, node) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if !eligible(c, pod, node) {
				continue
			}
			out[i][node.Labels[c.topologyKey]] += countMatching(c, pod.Namespace, ni)
		}
	}
	return out
}

type preFilterState struct {
	constraints []constraint
	counts      []map[string]int64
	minMatch    []int64
}

// Clone copies the counts (preemption changes them per simulated node).
func (s *preFilterState) Clone() framework.StateData {
	out := &preFilterState{constraints: s.constraints, counts: make([]map[string]int64, len(s.counts)), minMatch: slices.Clone(s.minMatch)}
	for i, m := range s.counts {
		out.counts[i] = maps.Clone(m)
	}
	return out
}

// setMinMatch computes each constraint's smallest domain count (0 below minDomains).
func (s *preFilterState) setMinMatch() {
	for i := range s.constraints {
		lowest := int64(math.MaxInt64)
		for _, n := range s.counts[i] {
			lowest = min(lowest, n)
		}
		if lowest == math.MaxInt64 || int64(len(s.counts[i])) < s.constraints[i].minDomains {
			lowest = 0
		}
		s.minMatch[i] = lowest
	}
}

// PreFilterExtensions lets preemption add and remove pods without a new PreFilter.
func (p PodTopologySpread) PreFilterExtensions() framework.PreFilterExtensions { return p }

// AddPod counts podToAdd in its node's domains.
func (PodTopologySpread) AddPod(_ context.Context, state *framework.CycleState, pod *v1.Pod, podToAdd *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	return updateState(state, pod, podToAdd, nodeInfo, 1)
}

// RemovePod uncounts podToRemove from its node's domains.
func (PodTopologySpread) RemovePod(_ context.Context, state *framework.CycleState, pod *v1.Pod, podToRemove *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	return updateState(state, pod, podToRemove, nodeInfo, -1)
}

// updateState changes the counts as countDomains would see the change: only for nodes that
// carry every key and are eligible, only for matching, non-terminating pods of the namespace.
func updateState(state *framework.CycleState, pod *v1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo, sign int64) *framework.Status {
	d, err := state.Read(preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s := d.(*preFilterState)
	node := ni.Node()
	if !hasAllKeys(s.constraints, node) || pi.Pod.Namespace != pod.Namespace || pi.Pod.DeletionTimestamp != nil {
		return nil
	}
	for i := range s.constraints {
		c := &s.constraints[i]
		if !eligible(c, pod, node) || !c.selector.Matches(labels.Set(pi.Pod.Labels)) {
			continue
		}
		s.counts[i][node.Labels[c.topologyKey]] += sign
	}
	s.setMinMatch()
	return nil
}

type preScoreState struct {
	constraints []constraint
	counts      []map[string]int64
	weights     []float64
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PodTopologySpread is the plugin.
type PodTopologySpread struct{}

var (
	_ framework.PreFilterPlugin   = PodTopologySpread{}
	_ framework.FilterPlugin      = PodTopologySpread{}
	_ framework.PreScorePlugin    = PodTopologySpread{}
	_ framework.ScorePlugin       = PodTopologySpread{}
	_ framework.EnqueueExtensions = PodTopologySpread{}
)

// New builds the plugin.
func New(json.RawMessage, framework.Handle) (framework.Plugin, error) {
	return PodTopologySpread{}, nil
}

// Name returns the plugin name.
func (PodTopologySpread) Name() string { return Name }

// PreFilter counts matching pods per domain for DoNotSchedule constraints.
func (PodTopologySpread) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes framework.NodeInfoLister) *framework.Status {
	cs := constraintsOf(pod, v1.DoNotSchedule)
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{constraints: cs, counts: countDomains(cs, pod, nodes), minMatch: make([]int64, len(cs))}
	s.setMinMatch()
	state.Write(preFilterStateKey, s)
	return nil
}

// Filter rejects nodes whose domain would exceed maxSkew with the pod on it.
func (PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	d, err := state.Read(preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s := d.(*preFilterState)
	for i, c := range s.constraints {
		v, ok := ni.Label(c.topologyKey)
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		var self int64
		if c.selector.Matches(labels.Set(pod.Labels)) {
			self = 1
		}
		if s.counts[i][v]+self-s.minMatch[i] > c.maxSkew {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

// PreScore counts per domain for ScheduleAnyway constraints and weighs each
// constraint by the log of its domain count among feasible nodes.
func (PodTopologySpread) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, feasible []*framework.NodeInfo, all framework.NodeInfoLister) *framework.Status {
	cs := constraintsOf(pod, v1.ScheduleAnyway)
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{constraints: cs, counts: countDomains(cs, pod, all), weights: make([]float64, len(cs))}
	for i, c := range cs {
		domains := map[string]bool{}
		for _, ni := range feasible {
			if v, ok := ni.Label(c.topologyKey); ok {
				domains[v] = true
			}
		}
		s.weights[i] = math.Log(float64(len(domains) + 2))
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// ignoredScore marks nodes lacking a constraint's key; they end at score 0.
const ignoredScore = -1

// Score is higher for fuller domains; NormalizeScore flips it.
func (PodTopologySpread) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	s := d.(*preScoreState)
	for _, c := range s.constraints {
		if _, ok := ni.Label(c.topologyKey); !ok {
			return ignoredScore, nil
		}
	}
	var score float64
	for i, c := range s.constraints {
		v, _ := ni.Label(c.topologyKey)
		cnt := s.counts[i][v]
		score += float64(cnt)*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions normalizes.
func (p PodTopologySpread) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore maps lower raw scores to higher final scores.
func (PodTopologySpread) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range scores {
		if s.Score == ignoredScore {
			continue
		}
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		switch {
		case scores[i].Score == ignoredScore:
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (hi + lo - scores[i].Score) / hi
		}
	}
	return nil
}

// EventsToRegister: matching pods and node labels/taints change the counts.
func (PodTopologySpread) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.KindAssignedPod, ActionType: framework.All},
		{Resource: framework.KindNode, ActionType: framework.All},
	}
}
