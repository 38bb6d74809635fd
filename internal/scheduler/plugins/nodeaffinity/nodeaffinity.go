// Package nodeaffinity implements NodeAffinity: spec.nodeSelector and required
// node affinity filter nodes; preferred node affinity terms add their weights
// to the score.
package nodeaffinity

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/helper"
)

// Name is the plugin name.
const Name = "NodeAffinity"

// ErrReason is Kubernetes' message.
const ErrReason = "node(s) didn't match Pod's node affinity/selector"

// NodeAffinity is the plugin.
type NodeAffinity struct{}

var (
	_ framework.PreFilterPlugin   = NodeAffinity{}
	_ framework.FilterPlugin      = NodeAffinity{}
	_ framework.PreScorePlugin    = NodeAffinity{}
	_ framework.ScorePlugin       = NodeAffinity{}
	_ framework.EnqueueExtensions = NodeAffinity{}
)

// New builds the plugin.
func New(json.RawMessage, framework.Handle) (framework.Plugin, error) { return NodeAffinity{}, nil }

// Name returns the plugin name.
func (NodeAffinity) Name() string { return Name }

// PreFilter skips Filter for pods without selector or required affinity.
func (NodeAffinity) PreFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ framework.NodeInfoLister) *framework.Status {
	a := pod.Spec.Affinity
	if len(pod.Spec.NodeSelector) == 0 && (a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil) {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}

// Filter rejects nodes not matching the selector and required terms.
func (NodeAffinity) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !helper.PodMatchesNodeSelectorAndAffinity(pod, ni.Node()) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

// PreScore skips scoring for pods without preferred terms.
func (NodeAffinity) PreScore(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo, _ framework.NodeInfoLister) *framework.Status {
	if preferred(pod) == nil {
		return framework.NewStatus(framework.Skip)
	}
	return nil
}

func preferred(pod *v1.Pod) []v1.PreferredSchedulingTerm {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// Score sums the weights of matching preferred terms.
func (NodeAffinity) Score(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var score int64
	for _, t := range preferred(pod) {
		if t.Weight != 0 && helper.NodeSelectorTermMatches(&t.Preference, ni.Node()) {
			score += int64(t.Weight)
		}
	}
	return score, nil
}

// ScoreExtensions normalizes.
func (n NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return normalizer{} }

type normalizer struct{}

func (normalizer) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
	return nil
}

// EventsToRegister: labels change on node add/update.
func (NodeAffinity) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.KindNode, ActionType: framework.Add | framework.Update}}
}
