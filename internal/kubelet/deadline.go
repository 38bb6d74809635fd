package kubelet

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reason and message of a pod stopped at spec.activeDeadlineSeconds, in Kubernetes' words.
const (
	deadlineExceededReason  = "DeadlineExceeded"
	deadlineExceededMessage = "Pod was active on the node longer than the specified deadline"
)

// activeDeadline decides about spec.activeDeadlineSeconds at now: whether the pod has been active
// (since status.startTime) for longer than its deadline, and otherwise how long it has left (0
// when it has no deadline or has not started).
func activeDeadline(pod *corev1.Pod, now time.Time) (exceeded bool, left time.Duration) {
	if pod.Spec.ActiveDeadlineSeconds == nil || pod.Status.StartTime == nil {
		return false, 0
	}
	deadline := pod.Status.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
	if !now.Before(deadline) {
		return true, 0
	}
	return false, deadline.Sub(now)
}

// failPastDeadline stops a pod whose active deadline passed and writes its final status as
// Kubernetes' kubelet does: Failed, reason DeadlineExceeded, the containers' last states kept.
func (k *Kubelet) failPastDeadline(ctx context.Context, pod *corev1.Pod, state *podRuntimeState) syncResult {
	k.log.Info("pod past its active deadline", "pod", pod.Namespace+"/"+pod.Name, "activeDeadlineSeconds", *pod.Spec.ActiveDeadlineSeconds)
	k.recorder.Event(pod, corev1.EventTypeNormal, deadlineExceededReason, deadlineExceededMessage)
	return k.failPod(ctx, pod, state, deadlineExceededReason, deadlineExceededMessage, gracePeriod(pod))
}

// failPod stops a pod's containers within grace and writes its final status: Failed, with
// reason and message, the containers' last states kept (a pod past its deadline, an evicted
// one).
func (k *Kubelet) failPod(ctx context.Context, pod *corev1.Pod, state *podRuntimeState, reason, message string, grace time.Duration) syncResult {
	k.prober.removePod(pod.UID)
	if err := k.killPod(ctx, pod, state, grace); err != nil {
		return syncResult{err: err}
	}
	after, err := runtimeState(ctx, k.runtime, pod.UID)
	if err != nil {
		return syncResult{err: err}
	}
	status := k.podStatus(pod, after, nil, true)
	status.Phase, status.Reason, status.Message = corev1.PodFailed, reason, message
	updated, err := k.patchPodStatus(ctx, pod, status)
	if err != nil {
		return syncResult{err: err}
	}
	k.keepNewer(updated)
	return syncResult{}
}
