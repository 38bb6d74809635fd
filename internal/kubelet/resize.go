package kubelet

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// In-place pod resize (InPlacePodVerticalScaling, beta and on by default in Kubernetes v1.33): a
// client changes a running pod's containers' cpu and memory through pods/resize, and the kubelet
// applies the change to the running containers without restarting them (unless a container's
// resizePolicy asks for a restart).
//
// The kubelet keeps two records per pod, as Kubernetes' allocation manager does:
//   - allocated: the resources the node promised each container. It starts as the spec at
//     admission and moves to a resized spec only once the resize fits the node. Containers are
//     always started with these, so a resize that waits (Deferred) never reaches a container by a
//     restart either.
//   - actuated: what the kubelet last applied to each running container instance (at its start or
//     by UpdateContainerResources). status.containerStatuses[].resources reports it, and a running
//     container whose actuated resources differ from its allocation is resized.
// Both are checkpointed in the pod's data dir, so a restarted kubelet neither admits a waiting
// resize without a fit check nor forgets what its containers hold.
//
// This file holds the decisions, free of I/O; resize_sync.go carries them out.

// containerActuation is what the kubelet applied to one instance of a container.
type containerActuation struct {
	ContainerID string                      `json:"containerID"`
	Resources   corev1.ResourceRequirements `json:"resources"`
}

// podResources is a pod's resource checkpoint.
type podResources struct {
	// Allocated maps each container (init, sidecar and regular) to its allocated resources.
	Allocated map[string]corev1.ResourceRequirements `json:"allocated"`
	// Actuated maps a container name to what its latest instance was given.
	Actuated map[string]containerActuation `json:"actuated,omitempty"`
}

func (r *podResources) clone() podResources {
	out := podResources{Allocated: map[string]corev1.ResourceRequirements{}, Actuated: map[string]containerActuation{}}
	for name, res := range r.Allocated {
		out.Allocated[name] = *res.DeepCopy()
	}
	for name, a := range r.Actuated {
		out.Actuated[name] = containerActuation{ContainerID: a.ContainerID, Resources: *a.Resources.DeepCopy()}
	}
	return out
}

// resizeCondition is a PodResizePending or PodResizeInProgress condition to report.
type resizeCondition struct {
	reason, message string
}

// allocationOf is the allocation a pod's spec asks for: every container's resources.
func allocationOf(pod *corev1.Pod) map[string]corev1.ResourceRequirements {
	out := map[string]corev1.ResourceRequirements{}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			out[cs[i].Name] = *cs[i].Resources.DeepCopy()
		}
	}
	return out
}

// withAllocation returns pod with its containers' resources replaced by the allocated ones, or pod
// itself when they are the same (or nothing is allocated yet). The result shares nothing it changes
// with pod.
func withAllocation(pod *corev1.Pod, allocated map[string]corev1.ResourceRequirements) *corev1.Pod {
	out := pod
	replace := func(get func(p *corev1.Pod) []corev1.Container) {
		for i, c := range get(pod) {
			res, ok := allocated[c.Name]
			if !ok || apiequality.Semantic.DeepEqual(c.Resources, res) {
				continue
			}
			if out == pod {
				out = pod.DeepCopy()
			}
			get(out)[i].Resources = *res.DeepCopy()
		}
	}
	replace(func(p *corev1.Pod) []corev1.Container { return p.Spec.InitContainers })
	replace(func(p *corev1.Pod) []corev1.Container { return p.Spec.Containers })
	return out
}

// resizable reports whether a container of the pod can be resized in place: regular containers
// and sidecars; an init container that ran to completion has nothing left to resize.
func resizable(pod *corev1.Pod, name string) bool {
	c := findContainer(pod, name)
	if c == nil {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return isSidecar(c)
		}
	}
	return true
}

// resizeInput is what a resize decision looks at.
type resizeInput struct {
	// desired is the pod as the API has it.
	desired *corev1.Pod
	// allocated is the pod's current allocation; nil before admission.
	allocated map[string]corev1.ResourceRequirements
	// static marks a static pod, which cannot be resized.
	static bool
	// allocatable is the node's allocatable resources.
	allocatable corev1.ResourceList
	// others are the other pods admitted to the node and still running, with their allocations
	// applied (withAllocation).
	others []*corev1.Pod
}

// resizeDecision is what to do about a pod's desired resources.
type resizeDecision struct {
	// allocate: the desired resources become the allocation.
	allocate bool
	// pending is the PodResizePending condition to report (nil: none).
	pending *resizeCondition
	// deferred asks to decide again later: other pods may leave room.
	deferred bool
}

// decideResize decides, as Kubernetes' kubelet does (handlePodResourcesResize, canResizePod),
// whether a pod's desired resources become its allocation. A pod not admitted yet is allocated its
// spec. A resize of a static pod, or one whose requests exceed what the node can ever offer, is
// Infeasible; one that does not fit beside the other pods' allocations now is Deferred (retried);
// one that fits is allocated.
func decideResize(in resizeInput) resizeDecision {
	if in.allocated == nil {
		return resizeDecision{allocate: true}
	}
	if withAllocation(in.desired, in.allocated) == in.desired {
		return resizeDecision{}
	}
	if in.static {
		return resizeDecision{pending: &resizeCondition{corev1.PodReasonInfeasible, "In-place resize of static-pods is not supported"}}
	}
	want := framework.PodSpecRequests(in.desired, false)
	capacity := framework.NewResource(in.allocatable)
	switch {
	case want.Memory > capacity.Memory:
		return resizeDecision{pending: &resizeCondition{corev1.PodReasonInfeasible,
			fmt.Sprintf("Node didn't have enough capacity: memory, requested: %d, capacity: %d", want.Memory, capacity.Memory)}}
	case want.MilliCPU > capacity.MilliCPU:
		return resizeDecision{pending: &resizeCondition{corev1.PodReasonInfeasible,
			fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", want.MilliCPU, capacity.MilliCPU)}}
	}
	used := &framework.Resource{}
	for _, p := range in.others {
		used.AddResource(framework.PodSpecRequests(p, false), 1)
	}
	if msg := insufficient(want, used, capacity); msg != "" {
		return resizeDecision{pending: &resizeCondition{corev1.PodReasonDeferred, msg}, deferred: true}
	}
	return resizeDecision{allocate: true}
}

// insufficient names the first resource of want that does not fit beside used within capacity, in
// the words of Kubernetes' admission ("Node didn't have enough resource: ..."), or "".
func insufficient(want, used, capacity *framework.Resource) string {
	check := func(name string, w, u, c int64) string {
		if w > 0 && w+u > c {
			return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, w, u, c)
		}
		return ""
	}
	if msg := check(string(corev1.ResourceCPU), want.MilliCPU, used.MilliCPU, capacity.MilliCPU); msg != "" {
		return msg
	}
	if msg := check(string(corev1.ResourceMemory), want.Memory, used.Memory, capacity.Memory); msg != "" {
		return msg
	}
	for name, w := range want.ScalarResources {
		if msg := check(string(name), w, used.ScalarResources[name], capacity.ScalarResources[name]); msg != "" {
			return msg
		}
	}
	return ""
}

// resizeStep is one running container to bring to its allocation.
type resizeStep struct {
	name string
	// restart: a resource that changed has the RestartContainer resize policy, so the container is
	// stopped and started again with its allocation instead of being updated in place.
	restart bool
}

// planActuation lists the running resizable containers of pod (its allocation applied) whose
// actuated cpu or memory differ from their allocation. running maps a container name to the ID of
// its running instance in the pod's sandbox. An instance the kubelet has no record of (it started
// the container and stopped before recording) is updated in place: an update with the allocation it
// most likely has already changes nothing, and a restart would cost the workload.
func planActuation(pod *corev1.Pod, actuated map[string]containerActuation, running map[string]string) []resizeStep {
	var steps []resizeStep
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			id, ok := running[c.Name]
			if !ok || !resizable(pod, c.Name) {
				continue
			}
			act, known := actuated[c.Name]
			if !known || act.ContainerID != id {
				steps = append(steps, resizeStep{name: c.Name})
				continue
			}
			cpuChanged := !sameQuantity(c.Resources.Requests, act.Resources.Requests, corev1.ResourceCPU) ||
				!sameQuantity(c.Resources.Limits, act.Resources.Limits, corev1.ResourceCPU)
			memChanged := !sameQuantity(c.Resources.Requests, act.Resources.Requests, corev1.ResourceMemory) ||
				!sameQuantity(c.Resources.Limits, act.Resources.Limits, corev1.ResourceMemory)
			if !cpuChanged && !memChanged {
				continue
			}
			restart := (cpuChanged && resizeRestarts(c, corev1.ResourceCPU)) || (memChanged && resizeRestarts(c, corev1.ResourceMemory))
			steps = append(steps, resizeStep{name: c.Name, restart: restart})
		}
	}
	return steps
}

// sameQuantity compares one resource of two lists by value; absent counts as zero, as Kubernetes
// compares actuated and allocated resources.
func sameQuantity(a, b corev1.ResourceList, name corev1.ResourceName) bool {
	qa, qb := a[name], b[name]
	return qa.Cmp(qb) == 0
}

// resizeRestarts reports whether resizing resource restarts the container (RestartContainer).
func resizeRestarts(c *corev1.Container, resource corev1.ResourceName) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == resource {
			return p.RestartPolicy == corev1.RestartContainer
		}
	}
	return false
}

// statusResources is what status.containerStatuses[].resources reports for a container instance:
// its allocation, with the cpu and memory the kubelet applied to the running instance in place of
// the allocated ones (they differ while a resize is being carried out).
func statusResources(allocated corev1.ResourceRequirements, act *containerActuation, runningID string) *corev1.ResourceRequirements {
	out := allocated.DeepCopy()
	if act == nil || runningID == "" || act.ContainerID != runningID {
		return out
	}
	overlay := func(dst, src corev1.ResourceList) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := dst[name]; !ok {
				continue
			}
			if q, ok := src[name]; ok {
				dst[name] = q.DeepCopy()
			}
		}
	}
	overlay(out.Requests, act.Resources.Requests)
	overlay(out.Limits, act.Resources.Limits)
	return out
}

// resizeInProgress reports whether a running resizable container of pod (its allocation applied)
// holds other cpu or memory than its allocation: Kubernetes' PodResizeInProgress.
func resizeInProgress(pod *corev1.Pod, actuated map[string]containerActuation, running map[string]string) bool {
	return len(planActuation(pod, actuated, running)) > 0
}

// withResizeConditions replaces the PodResizePending and PodResizeInProgress conditions of
// conditions by pending and inProgress (nil: absent); a condition that keeps its reason and message
// keeps its times.
func withResizeConditions(conditions, old []corev1.PodCondition, pending, inProgress *resizeCondition, now metav1.Time) []corev1.PodCondition {
	out := make([]corev1.PodCondition, 0, len(conditions)+2)
	for _, c := range conditions {
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			out = append(out, c)
		}
	}
	add := func(t corev1.PodConditionType, rc *resizeCondition) {
		if rc == nil {
			return
		}
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, Reason: rc.reason, Message: rc.message, LastProbeTime: now, LastTransitionTime: now}
		for _, o := range old {
			if o.Type == t && o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message {
				c.LastProbeTime, c.LastTransitionTime = o.LastProbeTime, o.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	add(corev1.PodResizePending, pending)
	add(corev1.PodResizeInProgress, inProgress)
	return out
}
