// Package tainttoleration implements TaintToleration: NoSchedule and NoExecute
// taints the pod does not tolerate reject the node; untolerated
// PreferNoSchedule taints lower its score.
package tainttoleration

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/helper"
)

// Name is the plugin name.
const Name = "TaintToleration"

// TaintToleration is the plugin.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin      = TaintToleration{}
	_ framework.ScorePlugin       = TaintToleration{}
	_ framework.ScoreExtensions   = TaintToleration{}
	_ framework.EnqueueExtensions = TaintToleration{}
)

// New builds the plugin.
func New(json.RawMessage, framework.Handle) (framework.Plugin, error) { return TaintToleration{}, nil }

// Name returns the plugin name.
func (TaintToleration) Name() string { return Name }

// Filter rejects a node with an untolerated NoSchedule/NoExecute taint.
func (TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	taint, found := helper.FindUntoleratedTaint(ni.Taints(), pod.Spec.Tolerations, helper.DoNotScheduleTaints)
	if !found {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
}

// Score counts untolerated PreferNoSchedule taints (normalized in reverse).
func (TaintToleration) Score(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	taints := ni.Taints()
	if len(taints) == 0 {
		return 0, nil
	}
	var tolerations []v1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tolerations = append(tolerations, t)
		}
	}
	var count int64
	for i := range taints {
		taint := &taints[i]
		if taint.Effect == v1.TaintEffectPreferNoSchedule && !helper.TolerationsTolerateTaint(tolerations, taint) {
			count++
		}
	}
	return count, nil
}

// ScoreExtensions normalizes.
func (t TaintToleration) ScoreExtensions() framework.ScoreExtensions { return t }

// NormalizeScore: fewer untolerated taints is better.
func (TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
	return nil
}

// EventsToRegister: taints change on node updates.
func (TaintToleration) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.KindNode, ActionType: framework.Add | framework.Update}}
}
