// Package nodename implements the NodeName filter: a pod with spec.nodeName
// set only fits that node.
package nodename

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Name is the plugin name.
const Name = "NodeName"

// ErrReason is Kubernetes' message.
const ErrReason = "node(s) didn't match the requested node name"

// NodeName is the plugin.
type NodeName struct{}

var (
	_ framework.FilterPlugin      = NodeName{}
	_ framework.EnqueueExtensions = NodeName{}
)

// New builds the plugin.
func New(json.RawMessage, framework.Handle) (framework.Plugin, error) { return NodeName{}, nil }

// Name returns the plugin name.
func (NodeName) Name() string { return Name }

// Filter rejects every node but the requested one.
func (NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != ni.Node().Name {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

// EventsToRegister: the named node may appear.
func (NodeName) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{{Resource: framework.KindNode, ActionType: framework.Add | framework.Update}}
}
