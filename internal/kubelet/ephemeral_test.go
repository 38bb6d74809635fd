package kubelet

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// runtimeContainer builds a runtime container status of a pod for the pure tests.
func runtimeContainer(id, name, sandboxID string, state runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{
		Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name}, State: state,
		Labels: map[string]string{sandboxIDKey: sandboxID},
	}
}

func debugPod(ephemeral ...corev1.EphemeralContainer) *corev1.Pod {
	pod := makePod("target").obj()
	pod.Spec.EphemeralContainers = ephemeral
	return pod
}

func ephemeralContainer(name, target string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: testImage},
		TargetContainerName:      target,
	}
}

func TestPlanEphemeral(t *testing.T) {
	const (
		running = runtimeapi.ContainerState_CONTAINER_RUNNING
		exitedS = runtimeapi.ContainerState_CONTAINER_EXITED
		created = runtimeapi.ContainerState_CONTAINER_CREATED
	)
	type step struct{ name, createdID string }
	tests := []struct {
		name       string
		ephemeral  []string
		containers []*runtimeapi.ContainerStatus
		want       []step
	}{
		{"no ephemeral containers", nil, []*runtimeapi.ContainerStatus{runtimeContainer("c1", "app", "sb", running)}, nil},
		{"new one starts", []string{"debugger"}, []*runtimeapi.ContainerStatus{runtimeContainer("c1", "app", "sb", running)}, []step{{name: "debugger"}}},
		{"running one is left alone", []string{"debugger"}, []*runtimeapi.ContainerStatus{runtimeContainer("e1", "debugger", "sb", running)}, nil},
		{"exited one is never restarted", []string{"debugger"}, []*runtimeapi.ContainerStatus{runtimeContainer("e1", "debugger", "sb", exitedS)}, nil},
		{"one that ran in an earlier sandbox is not started again", []string{"debugger"}, []*runtimeapi.ContainerStatus{runtimeContainer("e1", "debugger", "old", exitedS)}, nil},
		{"created but never started: start it", []string{"debugger"}, []*runtimeapi.ContainerStatus{runtimeContainer("e1", "debugger", "sb", created)}, []step{{name: "debugger", createdID: "e1"}}},
		{"created in a dead sandbox: left alone", []string{"debugger"}, []*runtimeapi.ContainerStatus{runtimeContainer("e1", "debugger", "old", created)}, nil},
		{"several, in spec order, only the new ones", []string{"b", "a", "c"}, []*runtimeapi.ContainerStatus{runtimeContainer("e1", "a", "sb", exitedS)}, []step{{name: "b"}, {name: "c"}}},
		{"even while init containers run", []string{"debugger"}, []*runtimeapi.ContainerStatus{runtimeContainer("i1", "init", "sb", running)}, []step{{name: "debugger"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ecs []corev1.EphemeralContainer
			for _, n := range tc.ephemeral {
				ecs = append(ecs, ephemeralContainer(n, ""))
			}
			pod := debugPod(ecs...)
			var got []step
			for _, s := range planEphemeral(pod, &podRuntimeState{containers: tc.containers}, "sb") {
				got = append(got, step{name: s.container.Name, createdID: s.createdID})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("plan = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEphemeralNamespaces(t *testing.T) {
	state := &podRuntimeState{containers: []*runtimeapi.ContainerStatus{
		runtimeContainer("new-app", "app", "sb", runtimeapi.ContainerState_CONTAINER_RUNNING),
		runtimeContainer("old-app", "app", "sb", runtimeapi.ContainerState_CONTAINER_EXITED),
	}}
	tests := []struct {
		name     string
		pod      func() *corev1.Pod
		wantPid  runtimeapi.NamespaceMode
		wantID   string
		wantFail bool
	}{
		{"no target: own PID namespace", func() *corev1.Pod { return debugPod(ephemeralContainer("debugger", "")) }, runtimeapi.NamespaceMode_CONTAINER, "", false},
		{"target: the target's newest container", func() *corev1.Pod { return debugPod(ephemeralContainer("debugger", "app")) }, runtimeapi.NamespaceMode_TARGET, "new-app", false},
		{"target never ran", func() *corev1.Pod { return debugPod(ephemeralContainer("debugger", "sidecar")) }, 0, "", true},
		{"pod shares its PID namespace: target not needed", func() *corev1.Pod {
			p := debugPod(ephemeralContainer("debugger", "app"))
			p.Spec.ShareProcessNamespace = ptr.To(true)
			return p
		}, runtimeapi.NamespaceMode_POD, "", false},
		{"host PID", func() *corev1.Pod {
			p := debugPod(ephemeralContainer("debugger", "app"))
			p.Spec.HostPID = true
			return p
		}, runtimeapi.NamespaceMode_NODE, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := ephemeralNamespaces(tc.pod(), "debugger", state)
			if tc.wantFail {
				if err == nil {
					t.Fatalf("no error, namespaces %v", ns)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ns.Pid != tc.wantPid || ns.TargetId != tc.wantID || ns.Network != runtimeapi.NamespaceMode_POD || ns.Ipc != runtimeapi.NamespaceMode_POD {
				t.Errorf("namespaces = %v, want pid %s target %q in the pod's network and IPC", ns, tc.wantPid, tc.wantID)
			}
		})
	}
}

func ephemeralStatusOf(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.EphemeralContainerStatuses {
		if pod.Status.EphemeralContainerStatuses[i].Name == name {
			return &pod.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}

// TestEphemeralContainerRunsOnce adds an ephemeral container to a running pod: it starts in the
// pod's sandbox in the target's PID namespace with stdin and a TTY, is reported in
// ephemeralContainerStatuses, is not counted for readiness, and is not restarted after it exits.
func TestEphemeralContainerRunsOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("web").obj())
	pod := h.waitPod("default", "web", "running and ready", func(p *corev1.Pod) bool {
		c := conditionOf(p, corev1.PodReady)
		return podRunning(p) && c != nil && c.Status == corev1.ConditionTrue
	})
	appID := h.runtime.RunningContainer("uid-web", "app")

	ec := ephemeralContainer("debugger", "app")
	ec.Stdin, ec.TTY = true, true
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, ec)
	if _, err := h.client.CoreV1().Pods("default").UpdateEphemeralContainers(context.Background(), "web", pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod = h.waitPod("default", "web", "debugger running", func(p *corev1.Pod) bool {
		s := ephemeralStatusOf(p, "debugger")
		return s != nil && s.State.Running != nil
	})
	s := ephemeralStatusOf(pod, "debugger")
	if s.Ready || s.Image != testImage || s.ImageID == "" || s.ContainerID == "" || s.RestartCount != 0 {
		t.Errorf("debugger status = %+v", s)
	}
	if c := conditionOf(pod, corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Errorf("an ephemeral container changed the pod's readiness: %+v", c)
	}
	debuggerID := h.runtime.RunningContainer("uid-web", "debugger")
	config := h.runtime.ContainerConfig(debuggerID)
	ns := config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != appID {
		t.Errorf("debugger namespaces = %v, want the PID namespace of %s", ns, appID)
	}
	if !config.Stdin || !config.Tty || config.Annotations[annotationContainerKind] != containerKindEphemeral {
		t.Errorf("debugger config: stdin %v tty %v annotations %v", config.Stdin, config.Tty, config.Annotations)
	}

	if err := h.runtime.Exit(debuggerID, 3); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	pod = h.waitPod("default", "web", "debugger terminated", func(p *corev1.Pod) bool {
		s := ephemeralStatusOf(p, "debugger")
		return s != nil && s.State.Terminated != nil
	})
	if term := ephemeralStatusOf(pod, "debugger").State.Terminated; term.ExitCode != 3 || term.Reason != "Error" || term.ContainerID == "" {
		t.Errorf("terminated = %+v", term)
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %s after the ephemeral container exited", pod.Status.Phase)
	}
	// Later syncs, past any back-off period, start nothing again. A sync is seen by its
	// PodSandboxStatus call; one that begins after the enqueue below means the one before ended.
	h.step(time.Minute)
	for range 2 {
		before := len(h.runtime.CallsTo("PodSandboxStatus"))
		h.kubelet.enqueue(pod.UID)
		h.eventually("a sync", func() bool { return len(h.runtime.CallsTo("PodSandboxStatus")) > before })
	}
	starts := 0
	for _, name := range h.runtime.CallsTo("StartContainer") {
		if name == "debugger" {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("debugger started %d times, want once", starts)
	}
}
