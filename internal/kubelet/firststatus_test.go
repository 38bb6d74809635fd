package kubelet

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	k8stesting "k8s.io/client-go/testing"
)

// TestFirstStatusBeforeSandbox: the kubelet reports a new pod as ContainerCreating (with its
// startTime) before creating its sandbox, as Kubernetes does, and keeps that startTime.
func TestFirstStatusBeforeSandbox(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("web").obj())
	running := h.waitPod("default", "web", "pod running", podRunning)

	var first *corev1.Pod
	for _, action := range h.client.Actions() {
		patch, ok := action.(k8stesting.PatchAction)
		if !ok || patch.GetSubresource() != "status" || patch.GetName() != "web" {
			continue
		}
		var p corev1.Pod
		if err := json.Unmarshal(patch.GetPatch(), &p); err != nil {
			t.Fatal(err)
		}
		first = &p
		break
	}
	if first == nil {
		t.Fatal("no status patch")
	}
	if first.Status.StartTime == nil || first.Status.PodIP != "" {
		t.Errorf("first status: startTime %v, podIP %q; want a startTime and no IP yet", first.Status.StartTime, first.Status.PodIP)
	}
	if len(first.Status.ContainerStatuses) != 1 || first.Status.ContainerStatuses[0].State.Waiting == nil ||
		first.Status.ContainerStatuses[0].State.Waiting.Reason != reasonContainerCreating {
		t.Errorf("first status containers = %+v, want one waiting in ContainerCreating", first.Status.ContainerStatuses)
	}
	if running.Status.StartTime == nil || !running.Status.StartTime.Equal(first.Status.StartTime) {
		t.Errorf("startTime changed from %v to %v", first.Status.StartTime, running.Status.StartTime)
	}
}
