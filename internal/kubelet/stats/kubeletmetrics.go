package stats

import (
	"io"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerStates are the container_state values of kubelet_running_containers, in Kubernetes'
// words for the runtime's states.
var containerStates = []struct {
	state runtimeapi.ContainerState
	label string
}{
	{runtimeapi.ContainerState_CONTAINER_CREATED, "created"},
	{runtimeapi.ContainerState_CONTAINER_EXITED, "exited"},
	{runtimeapi.ContainerState_CONTAINER_RUNNING, "running"},
	{runtimeapi.ContainerState_CONTAINER_UNKNOWN, "unknown"},
}

// WriteKubeletMetrics renders the kubelet's own gauges with upstream's /metrics names:
// kubelet_node_name (always 1, labelled with the node), kubelet_running_pods (pods whose sandbox
// is ready) and kubelet_running_containers by container_state, from the runtime's lists. Without
// the runtime's lists (it could not be read) only the node's name is written.
func WriteKubeletMetrics(w io.Writer, nodeName string, sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, runtimeRead bool) error {
	families := []*family{
		{name: "kubelet_node_name", kind: "gauge", help: "[ALPHA] The node's name. The count is always 1.",
			samples: []sample{{labels: renderLabels("node", nodeName), value: 1}}},
	}
	if runtimeRead {
		ready := 0
		for _, sb := range sandboxes {
			if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				ready++
			}
		}
		byState := map[runtimeapi.ContainerState]int{}
		for _, c := range containers {
			byState[c.GetState()]++
		}
		running := &family{name: "kubelet_running_containers", kind: "gauge", help: "[ALPHA] Number of containers currently running"}
		for _, s := range containerStates {
			running.samples = append(running.samples, sample{labels: renderLabels("container_state", s.label), value: float64(byState[s.state])})
		}
		families = append(families,
			&family{name: "kubelet_running_pods", kind: "gauge", help: "[ALPHA] Number of pods that have a running pod sandbox",
				samples: []sample{{labels: "", value: float64(ready)}}},
			running)
	}
	return writeFamilies(w, families)
}
