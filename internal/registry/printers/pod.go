package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
)

// nodeLostReason is the pod status reason the node lifecycle controller sets on pods of an
// unreachable node; such a pod being deleted prints as Unknown rather than Terminating.
const nodeLostReason = "NodeLost"

func podPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Ready", columnTypeString, "The aggregate readiness state of this pod for accepting traffic."),
			column("Status", columnTypeString, "The aggregate status of the containers in this pod."),
			column("Restarts", columnTypeString, "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
			ageColumn(),
			wide(column("IP", columnTypeString, corev1.PodStatus{}.SwaggerDoc()["podIP"])),
			wide(column("Node", columnTypeString, corev1.PodSpec{}.SwaggerDoc()["nodeName"])),
			wide(column("Nominated Node", columnTypeString, corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"])),
			wide(column("Readiness Gates", columnTypeString, corev1.PodSpec{}.SwaggerDoc()["readinessGates"])),
		},
		Row: typedRow("pods", func(pod *corev1.Pod, now time.Time) ([]interface{}, error) {
			s := summarizePod(pod, now)
			return []interface{}{
				pod.Name, s.ready, s.status, s.restarts, age(pod.CreationTimestamp, now),
				podIP(pod), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), readinessGates(pod),
			}, nil
		}),
	}
}

// podSummary holds the READY, STATUS and RESTARTS cells of a pod.
type podSummary struct {
	ready    string
	status   string
	restarts string
}

// restartTally sums container restarts and remembers the most recent restart.
type restartTally struct {
	count int
	last  metav1.Time
}

func (t *restartTally) add(cs *corev1.ContainerStatus) {
	t.count += int(cs.RestartCount)
	if term := cs.LastTerminationState.Terminated; term != nil && t.last.Before(&term.FinishedAt) {
		t.last = term.FinishedAt
	}
}

// summarizePod computes the cells kubectl shows for a pod. The STATUS is the pod's phase (or
// status reason), overridden, in this order, by a scheduling gate, by the first init container
// that has not finished ("Init:1/3", "Init:CrashLoopBackOff"), by the last main container with a
// waiting or terminated reason, and finally by deletion ("Terminating").
func summarizePod(pod *corev1.Pod, now time.Time) podSummary {
	total := len(pod.Spec.Containers)
	ready := 0

	status := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		status = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			status = corev1.PodReasonSchedulingGated
		}
	}

	// Sidecars (init containers that keep running) count as containers of the pod.
	sidecars := make(map[string]bool)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}

	var allRestarts, sidecarRestarts restartTally
	initializing := false
	for i := range pod.Status.InitContainerStatuses {
		cs := &pod.Status.InitContainerStatuses[i]
		allRestarts.add(cs)
		if sidecars[cs.Name] {
			sidecarRestarts.add(cs)
		}
		if cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
			continue
		}
		if sidecars[cs.Name] && cs.Started != nil && *cs.Started {
			if cs.Ready {
				ready++
			}
			continue
		}
		switch {
		case cs.State.Terminated != nil:
			status = "Init:" + terminatedReason(cs.State.Terminated)
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			status = "Init:" + cs.State.Waiting.Reason
		default:
			status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	restarts := allRestarts
	if !initializing || podConditionTrue(pod, corev1.PodInitialized, true) {
		restarts = sidecarRestarts
		hasRunning := false
		// The first container (in spec order) with a reason wins, so walk backwards.
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := &pod.Status.ContainerStatuses[i]
			restarts.add(cs)
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				status = cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				status = terminatedReason(cs.State.Terminated)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		// A pod whose finished containers say Completed while others still run is not complete.
		if status == "Completed" && hasRunning {
			if podConditionTrue(pod, corev1.PodReady, false) {
				status = "Running"
			} else {
				status = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeLostReason:
			status = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			status = "Terminating"
		}
	}

	restartCell := strconv.Itoa(restarts.count)
	if restarts.count != 0 && !restarts.last.IsZero() {
		restartCell = fmt.Sprintf("%d (%s ago)", restarts.count, age(restarts.last, now))
	}
	return podSummary{ready: fmt.Sprintf("%d/%d", ready, total), status: status, restarts: restartCell}
}

// terminatedReason names a terminated container's state: its reason, or its signal or exit code
// when the runtime gave no reason.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// podConditionTrue reports whether the pod's condition of type typ is True. With firstOnly, only
// the first condition of that type counts (as Kubernetes checks Initialized); otherwise any.
func podConditionTrue(pod *corev1.Pod, typ corev1.PodConditionType, firstOnly bool) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type != typ {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return true
		}
		if firstOnly {
			return false
		}
	}
	return false
}

func podIP(pod *corev1.Pod) string {
	if len(pod.Status.PodIPs) > 0 && pod.Status.PodIPs[0].IP != "" {
		return pod.Status.PodIPs[0].IP
	}
	return orNone(pod.Status.PodIP)
}

// readinessGates prints how many of the pod's readiness gates have a True condition ("1/2").
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return noneCell
	}
	passed := 0
	for _, gate := range pod.Spec.ReadinessGates {
		for _, c := range pod.Status.Conditions {
			if c.Type == gate.ConditionType {
				if c.Status == corev1.ConditionTrue {
					passed++
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", passed, len(pod.Spec.ReadinessGates))
}
