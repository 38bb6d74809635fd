// Package nodeunschedulable implements the NodeUnschedulable filter: cordoned
// nodes (spec.unschedulable) take only pods tolerating the unschedulable taint.
package nodeunschedulable

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins/helper"
)

// Name is the plugin name.
const Name = "NodeUnschedulable"

// ErrReason is Kubernetes' message.
const ErrReason = "node(s) were unschedulable"

// NodeUnschedulable is the plugin.
type NodeUnschedulable struct{}

var (
	_ framework.FilterPlugin      = NodeUnschedulable{}
	_ framework.EnqueueExtensions = NodeUnschedulable{}
)

// New builds the plugin.
func New(json.RawMessage, framework.Handle) (framework.Plugin, error) {
	return NodeUnschedulable{}, nil
}

// Name returns the plugin name.
func (NodeUnschedulable) Name() string { return Name }

// Filter rejects cordoned nodes unless the pod tolerates node.kubernetes.io/unschedulable:NoSchedule.
func (NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !ni.Unschedulable() {
		return nil
	}
	taint := v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	if helper.TolerationsTolerateTaint(pod.Spec.Tolerations, &taint) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
}

// EventsToRegister: an uncordon is a node update.
func (NodeUnschedulable) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.KindNode, ActionType: framework.Add | framework.Update}}
}
