package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Pod condition reasons as Kubernetes writes them.
const (
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonContainersNotReady       = "ContainersNotReady"
	reasonPodCompleted             = "PodCompleted"
	reasonReadinessGatesNotReady   = "ReadinessGatesNotReady"

	// maxTerminationMessage bounds a container's termination message.
	maxTerminationMessage = 4096
)

// writeStatus computes the pod's status from the runtime state and writes
// it if it changed. terminal marks a pod whose containers will not run
// again (deleted, or its sandbox is gone for good).
func (k *Kubelet) writeStatus(ctx context.Context, pod *corev1.Pod, state *podRuntimeState, sandbox *runtimeapi.PodSandboxStatus, terminal bool) error {
	status := k.podStatus(pod, state, sandbox, terminal)
	if apiequality.Semantic.DeepEqual(status, pod.Status) {
		return nil
	}
	updated, err := k.patchPodStatus(ctx, pod, status)
	if err != nil {
		return err
	}
	k.keepNewer(updated)
	return nil
}

// patchPodStatus sends the change as a strategic merge patch of the status
// subresource carrying the pod's UID as a precondition, like Kubernetes'
// kubelet, so a pod re-created under the same name is never touched.
func (k *Kubelet) patchPodStatus(ctx context.Context, pod *corev1.Pod, status corev1.PodStatus) (*corev1.Pod, error) {
	oldData, err := json.Marshal(corev1.Pod{Status: pod.Status})
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(corev1.Pod{Status: status})
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("pod status patch: %w", err)
	}
	if string(patch) == "{}" {
		// Equal once serialized (times differ below the second the API
		// keeps): writing would change nothing but would wake every watcher
		// of the pod, this kubelet's informer included, whose sync would
		// compute the same status again.
		return pod, nil
	}
	var withUID map[string]any
	if err := json.Unmarshal(patch, &withUID); err != nil {
		return nil, err
	}
	withUID["metadata"] = map[string]any{"uid": string(pod.UID)}
	patch, err = json.Marshal(withUID)
	if err != nil {
		return nil, err
	}
	updated, err := k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return updated, nil
}

// podStatus computes a pod's status the way Kubernetes reports it.
func (k *Kubelet) podStatus(pod *corev1.Pod, state *podRuntimeState, sandbox *runtimeapi.PodSandboxStatus, terminal bool) corev1.PodStatus {
	old := pod.Status
	status := *old.DeepCopy()
	now := metav1.NewTime(k.clock.Now())
	hostIPs := k.nodes.currentHostIPs()
	if len(hostIPs) > 0 {
		status.HostIP, status.HostIPs = hostIPs[0].IP, hostIPs
	}
	sandboxReady := sandbox != nil && sandbox.State == runtimeapi.PodSandboxState_SANDBOX_READY && !terminal
	if sandboxReady {
		if ips := sandboxIPs(pod, sandbox, hostIPs); len(ips) > 0 {
			status.PodIP = ips[0]
			status.PodIPs = nil
			for _, ip := range ips {
				status.PodIPs = append(status.PodIPs, corev1.PodIP{IP: ip})
			}
		}
	}
	if status.StartTime == nil {
		status.StartTime = &now
	}
	if status.QOSClass == "" {
		status.QOSClass = qosClass(pod)
	}

	currentSandboxID := ""
	if sb := state.readySandbox(); sb != nil {
		currentSandboxID = sb.Id
	}
	initDone := true
	status.InitContainerStatuses = nil
	// Once a regular container was created in this sandbox, the pod is
	// initialized: a sidecar that exits later does not undo that.
	regularStarted := currentSandboxID != "" &&
		slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return state.latest(c.Name, currentSandboxID) != nil })
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := k.containerStatus(pod, c, containerKindInit, state, reasonPodInitializing)
		if terminal && isSidecar(c) {
			cs.Ready = false
		}
		cur := state.latest(c.Name, currentSandboxID)
		if !initContainerDone(c, cur, cs) && !(isSidecar(c) && regularStarted) {
			initDone = false
		}
		status.InitContainerStatuses = append(status.InitContainerStatuses, cs)
	}
	defaultReason := reasonContainerCreating
	if !initDone {
		defaultReason = reasonPodInitializing
	}
	status.ContainerStatuses = nil
	for i := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, k.containerStatus(pod, &pod.Spec.Containers[i], containerKindRegular, state, defaultReason))
	}
	report := k.resizeReport(pod.UID)
	for i := range status.InitContainerStatuses {
		report.containerResources(&status.InitContainerStatuses[i], &pod.Spec.InitContainers[i], state.latest(pod.Spec.InitContainers[i].Name, ""))
	}
	for i := range status.ContainerStatuses {
		report.containerResources(&status.ContainerStatuses[i], &pod.Spec.Containers[i], state.latest(pod.Spec.Containers[i].Name, ""))
	}
	status.EphemeralContainerStatuses = k.ephemeralStatuses(pod, state)
	status.Phase = podPhase(pod, status.InitContainerStatuses, status.ContainerStatuses, terminal)
	if terminal {
		for i := range status.ContainerStatuses {
			status.ContainerStatuses[i].Ready = false
		}
	}
	status.Conditions = podConditions(pod, old.Conditions, status, initDone, sandboxReady || (len(state.sandboxes) > 0 && state.sandboxes[0].State == runtimeapi.PodSandboxState_SANDBOX_READY && !terminal), now)
	var pending, inProgress *resizeCondition
	if !terminal && status.Phase != corev1.PodSucceeded && status.Phase != corev1.PodFailed {
		pending, inProgress = report.conditions(withAllocation(pod, report.allocated), runningIn(pod, state, currentSandboxID))
	}
	status.Conditions = withResizeConditions(status.Conditions, old.Conditions, pending, inProgress, now)
	return status
}

// containerStatus reports one container from its newest runtime instance.
func (k *Kubelet) containerStatus(pod *corev1.Pod, c *corev1.Container, kind string, state *podRuntimeState, defaultReason string) corev1.ContainerStatus {
	cur := state.latest(c.Name, "")
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, RestartCount: restartCount(cur), Started: ptrBool(false)}
	waiting, hasWaiting := k.waitingFor(pod.UID, c.Name)
	if cur == nil {
		if !hasWaiting {
			waiting = corev1.ContainerStateWaiting{Reason: defaultReason}
		}
		cs.State.Waiting = &waiting
		return cs
	}
	cs.ContainerID = k.runtimeID + "://" + cur.Id
	cs.ImageID = cur.ImageRef
	previous := state.previous(cur)
	if exited(previous) {
		cs.LastTerminationState.Terminated = k.terminatedState(c, previous)
	}
	switch cur.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Unix(0, cur.StartedAt))}
		cs.Started = ptrBool(k.prober.started(pod.UID, c, cur.Id))
		// A running init container is ready only if it is a sidecar: by its
		// readiness probe, like a regular container.
		cs.Ready = (kind == containerKindRegular || isSidecar(c)) && k.prober.ready(pod.UID, c, cur.Id)
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		terminated := k.terminatedState(c, cur)
		if hasWaiting {
			cs.State.Waiting = &waiting
			cs.LastTerminationState = corev1.ContainerState{Terminated: terminated}
		} else {
			cs.State.Terminated = terminated
			// As in Kubernetes, an init container that completed is ready:
			// its work is done.
			cs.Ready = kind == containerKindInit && !isSidecar(c) && terminated.ExitCode == 0
		}
	default:
		if !hasWaiting {
			waiting = corev1.ContainerStateWaiting{Reason: reasonContainerCreating}
		}
		cs.State.Waiting = &waiting
	}
	return cs
}

func ptrBool(b bool) *bool { return &b }

func (k *Kubelet) terminatedState(c *corev1.Container, s *runtimeapi.ContainerStatus) *corev1.ContainerStateTerminated {
	reason := s.Reason
	if reason == "" {
		reason = "Completed"
		if s.ExitCode != 0 {
			reason = "Error"
		}
	}
	t := &corev1.ContainerStateTerminated{
		ExitCode:    s.ExitCode,
		Reason:      reason,
		Message:     s.Message,
		StartedAt:   metav1.NewTime(time.Unix(0, s.StartedAt)),
		FinishedAt:  metav1.NewTime(time.Unix(0, s.FinishedAt)),
		ContainerID: k.runtimeID + "://" + s.Id,
	}
	if path := s.Annotations[annotationTerminationMessage]; path != "" {
		if msg := readLimited(path, maxTerminationMessage); msg != "" {
			t.Message = msg
		}
	}
	if t.Message == "" && s.ExitCode != 0 && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && s.LogPath != "" {
		t.Message = logTail(s.LogPath, 80, 2048)
	}
	return t
}

func readLimited(path string, limit int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(data) > limit {
		data = data[:limit]
	}
	return string(data)
}

// logTail returns the message part of the last lines of a CRI log file
// (lines look like "<time> <stream> <F|P> <message>").
func logTail(path string, lines, limit int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	var b strings.Builder
	for _, line := range all {
		parts := strings.SplitN(line, " ", 4)
		if len(parts) == 4 {
			b.WriteString(parts[3])
			if parts[2] == "F" {
				b.WriteByte('\n')
			}
		}
	}
	out := b.String()
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// initContainerDone reports whether an init container no longer holds up the
// pod: a regular one completed successfully, a sidecar runs and is started.
func initContainerDone(c *corev1.Container, cur *runtimeapi.ContainerStatus, cs corev1.ContainerStatus) bool {
	if isSidecar(c) {
		return running(cur) && cs.Started != nil && *cs.Started
	}
	return exited(cur) && cur.ExitCode == 0
}

// podPhase derives the phase from container statuses. terminal means no
// container will run again, whatever the restart policy.
func podPhase(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	policy := pod.Spec.RestartPolicy
	pendingInit := false
	for i, s := range initStatuses {
		if i < len(pod.Spec.InitContainers) && isSidecar(&pod.Spec.InitContainers[i]) {
			// A sidecar holds up the pod until it first runs; its later
			// restarts do not make the pod pending again.
			if s.State.Running == nil && s.RestartCount == 0 && s.LastTerminationState.Terminated == nil && s.State.Terminated == nil {
				pendingInit = true
			}
			continue
		}
		switch {
		case s.State.Terminated != nil && s.State.Terminated.ExitCode == 0:
		case s.State.Terminated != nil && policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		default:
			pendingInit = true
		}
	}
	var running, waiting, stopped, succeeded int
	for _, s := range statuses {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	if terminal {
		switch {
		case running > 0 || pendingInit || waiting > 0 || stopped != succeeded:
			return corev1.PodFailed
		}
		return corev1.PodSucceeded
	}
	switch {
	case pendingInit:
		return corev1.PodPending
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case policy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// podConditions computes the kubelet-owned conditions and keeps the others
// (PodScheduled, readiness gates, disruption targets) as they were.
func podConditions(pod *corev1.Pod, old []corev1.PodCondition, status corev1.PodStatus, initDone, sandboxReady bool, now metav1.Time) []corev1.PodCondition {
	finished := status.Phase == corev1.PodSucceeded || status.Phase == corev1.PodFailed
	condition := func(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: now}
		if ok {
			c = corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
		}
		for _, o := range old {
			if o.Type == t && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
				c.LastProbeTime = o.LastProbeTime
			}
		}
		return c
	}

	var incomplete []string
	for i, s := range status.InitContainerStatuses {
		if i < len(pod.Spec.InitContainers) && isSidecar(&pod.Spec.InitContainers[i]) {
			if s.State.Running == nil || s.Started == nil || !*s.Started {
				incomplete = append(incomplete, s.Name)
			}
			continue
		}
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			incomplete = append(incomplete, s.Name)
		}
	}
	initialized := condition(corev1.PodInitialized, initDone || len(incomplete) == 0, reasonContainersNotInitialized,
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")))

	var unready []string
	for _, s := range status.ContainerStatuses {
		if !s.Ready {
			unready = append(unready, s.Name)
		}
	}
	containersReady := condition(corev1.ContainersReady, len(unready) == 0 && !finished, reasonContainersNotReady,
		fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
	ready := condition(corev1.PodReady, len(unready) == 0 && !finished, reasonContainersNotReady,
		fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
	if finished {
		containersReady = condition(corev1.ContainersReady, false, reasonPodCompleted, "")
		ready = condition(corev1.PodReady, false, reasonPodCompleted, "")
	}
	if ready.Status == corev1.ConditionTrue {
		var missing []string
		for _, gate := range pod.Spec.ReadinessGates {
			found := false
			for _, o := range old {
				if o.Type == gate.ConditionType && o.Status == corev1.ConditionTrue {
					found = true
				}
			}
			if !found {
				missing = append(missing, string(gate.ConditionType))
			}
		}
		if len(missing) > 0 {
			ready = condition(corev1.PodReady, false, reasonReadinessGatesNotReady,
				fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", missing[0]))
		}
	}
	if finished && initDone {
		initialized = condition(corev1.PodInitialized, true, "", "")
	}
	owned := []corev1.PodCondition{
		condition(corev1.PodReadyToStartContainers, sandboxReady, "", ""),
		initialized, ready, containersReady,
	}
	out := slices.Clone(owned)
	for _, o := range old {
		if !slices.ContainsFunc(owned, func(c corev1.PodCondition) bool { return c.Type == o.Type }) {
			out = append(out, o)
		}
	}
	return out
}
