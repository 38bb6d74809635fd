package stats

import (
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestWriteKubeletMetrics(t *testing.T) {
	sandboxes := []*runtimeapi.PodSandbox{
		{Id: "a", State: runtimeapi.PodSandboxState_SANDBOX_READY},
		{Id: "b", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY},
		{Id: "c", State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}
	containers := []*runtimeapi.Container{
		{Id: "1", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		{Id: "2", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		{Id: "3", State: runtimeapi.ContainerState_CONTAINER_EXITED},
	}
	var b strings.Builder
	if err := WriteKubeletMetrics(&b, `node-"1"`, sandboxes, containers, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# TYPE kubelet_node_name gauge\n",
		`kubelet_node_name{node="node-\"1\""} 1` + "\n",
		"kubelet_running_pods 2\n",
		`kubelet_running_containers{container_state="running"} 2` + "\n",
		`kubelet_running_containers{container_state="exited"} 1` + "\n",
		`kubelet_running_containers{container_state="created"} 0` + "\n",
		`kubelet_running_containers{container_state="unknown"} 0` + "\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}

	b.Reset()
	if err := WriteKubeletMetrics(&b, "n1", nil, nil, false); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, `kubelet_node_name{node="n1"} 1`) || strings.Contains(got, "kubelet_running_pods") {
		t.Errorf("without the runtime's lists: want only the node's name, got\n%s", got)
	}
}
