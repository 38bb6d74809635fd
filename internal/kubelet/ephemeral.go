package kubelet

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerKindEphemeral marks the runtime containers of
// spec.ephemeralContainers (kubectl debug).
const containerKindEphemeral = "ephemeral"

// ephemeralStep is one step of the plan for a pod's ephemeral containers.
type ephemeralStep struct {
	// container is the ephemeral container as a Container (the two share
	// their fields).
	container *corev1.Container
	// createdID is a container created in the current sandbox but never
	// started (the kubelet stopped in between): start it instead of creating
	// another one.
	createdID string
}

// planEphemeral decides which of the pod's ephemeral containers to start in
// the ready sandbox sandboxID. Ephemeral containers run once: one that the
// runtime ran before (in any sandbox of the pod, running or exited) is never
// started again, and nothing waits for the pod's initialization, as in
// Kubernetes. The order is the spec's.
func planEphemeral(pod *corev1.Pod, state *podRuntimeState, sandboxID string) []ephemeralStep {
	var plan []ephemeralStep
	for i := range pod.Spec.EphemeralContainers {
		c := ephemeralAsContainer(&pod.Spec.EphemeralContainers[i])
		cur := state.latest(c.Name, "")
		switch {
		case cur == nil:
			plan = append(plan, ephemeralStep{container: c})
		case cur.State == runtimeapi.ContainerState_CONTAINER_CREATED && cur.Labels[sandboxIDKey] == sandboxID:
			plan = append(plan, ephemeralStep{container: c, createdID: cur.Id})
		}
	}
	return plan
}

// ephemeralAsContainer views an ephemeral container as a Container.
func ephemeralAsContainer(ec *corev1.EphemeralContainer) *corev1.Container {
	return (*corev1.Container)(&ec.EphemeralContainerCommon)
}

// findEphemeral returns the pod's ephemeral container called name, or nil.
func findEphemeral(pod *corev1.Pod, name string) *corev1.EphemeralContainer {
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return &pod.Spec.EphemeralContainers[i]
		}
	}
	return nil
}

// findAnyContainer is findContainer that also knows the ephemeral containers:
// logs, exec and attach reach them too.
func findAnyContainer(pod *corev1.Pod, name string) *corev1.Container {
	if c := findContainer(pod, name); c != nil {
		return c
	}
	if ec := findEphemeral(pod, name); ec != nil {
		return ephemeralAsContainer(ec)
	}
	return nil
}

// ephemeralNamespaces returns the namespace options of an ephemeral
// container: the pod's, except that with targetContainerName (and no PID
// namespace shared by the whole pod or with the node) it joins the process
// namespace of the target's newest runtime container, through CRI's TARGET
// mode, so `kubectl debug --target` sees the target's processes.
func ephemeralNamespaces(pod *corev1.Pod, name string, state *podRuntimeState) (*runtimeapi.NamespaceOption, error) {
	ns := podNamespaces(pod)
	ec := findEphemeral(pod, name)
	if ec == nil || ec.TargetContainerName == "" || ns.Pid != runtimeapi.NamespaceMode_CONTAINER {
		return ns, nil
	}
	target := state.latest(ec.TargetContainerName, "")
	if target == nil {
		return nil, fmt.Errorf("unable to find target container %s", ec.TargetContainerName)
	}
	ns.Pid = runtimeapi.NamespaceMode_TARGET
	ns.TargetId = target.Id
	return ns, nil
}

// ephemeralStatuses reports the pod's ephemeral containers in spec order.
// They are never ready and never counted for the pod's phase or readiness.
func (k *Kubelet) ephemeralStatuses(pod *corev1.Pod, state *podRuntimeState) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for i := range pod.Spec.EphemeralContainers {
		c := ephemeralAsContainer(&pod.Spec.EphemeralContainers[i])
		cs := k.containerStatus(pod, c, containerKindEphemeral, state, reasonContainerCreating)
		cs.Ready = false
		out = append(out, cs)
	}
	return out
}
