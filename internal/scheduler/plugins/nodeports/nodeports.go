// Package nodeports implements the NodePorts filter: a pod's host ports must be
// free on the node (same protocol and port on an overlapping address conflicts).
package nodeports

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Name is the plugin name.
const Name = "NodePorts"

// ErrReason is Kubernetes' message.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

const stateKey framework.StateKey = "PreFilter" + Name

type preFilterState []v1.ContainerPort

func (s preFilterState) Clone() framework.StateData { return s }

// NodePorts is the plugin.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin   = NodePorts{}
	_ framework.FilterPlugin      = NodePorts{}
	_ framework.EnqueueExtensions = NodePorts{}
)

// New builds the plugin.
func New(json.RawMessage, framework.Handle) (framework.Plugin, error) { return NodePorts{}, nil }

// Name returns the plugin name.
func (NodePorts) Name() string { return Name }

// PreFilter collects the pod's host ports; pods without any skip Filter.
func (NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ framework.NodeInfoLister) *framework.Status {
	ports := framework.PodHostPorts(pod)
	if len(ports) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, preFilterState(ports))
	return nil
}

// Filter rejects nodes where any wanted host port is taken.
func (NodePorts) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	var ports []v1.ContainerPort
	if d, err := state.Read(stateKey); err == nil {
		ports = d.(preFilterState)
	} else {
		ports = framework.PodHostPorts(pod)
	}
	for _, p := range ports {
		if ni.UsedPorts.Conflicts(p.HostIP, string(p.Protocol), p.HostPort) {
			return framework.NewStatus(framework.Unschedulable, ErrReason)
		}
	}
	return nil
}

// EventsToRegister: ports free up when pods go, or new nodes come.
func (NodePorts) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.KindAssignedPod, ActionType: framework.Delete},
		{Resource: framework.KindNode, ActionType: framework.Add | framework.Update},
	}
}
