package simnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const (
	// Reasons as the kubelet writes them.
	reasonPodCompleted       = "PodCompleted"
	reasonPodFailed          = "PodFailed"
	reasonContainerCompleted = "Completed"
	reasonContainerError     = "Error"

	containerIDScheme = "sim://"
)

// podState is what the simulator remembers of one pod between syncs.
type podState struct {
	uid  types.UID
	node *simNode
	ip   string
	// seenAt is when the pod was first seen bound; PodStartDelay counts from it.
	seenAt time.Time
	// startedAt is when this simulator reported the pod Running; zero after a restart, when the
	// pod's status.startTime (whole seconds) stands in.
	startedAt time.Time
	// The CompletePods verdict, asked once.
	completionDecided bool
	completes         bool
	exitCode          int32
	runFor            time.Duration
	deleteRequested   bool
}

// syncPod brings one pod's status to what a kubelet on its node would report. It is
// level-triggered: it reads the pod from the informer cache and can be repeated any number of times.
func (s *Simulator) syncPod(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this simulator queued; nothing to retry
	}
	pod, err := s.lister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		s.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pod %s from cache: %w", key, err)
	}
	node := s.byName[pod.Spec.NodeName]
	if node == nil {
		s.forget(key)
		return nil
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		s.releaseAddress(key, pod.UID)
		if pod.DeletionTimestamp != nil {
			return s.finishDeletion(ctx, key, pod)
		}
		return nil
	}
	now := s.cfg.Clock.Now()
	st := s.track(key, pod, node, now)
	if pod.DeletionTimestamp != nil {
		return s.finishDeletion(ctx, key, pod)
	}
	if !reportedRunning(pod) {
		if wait := st.seenAt.Add(s.cfg.PodStartDelay).Sub(now); wait > 0 {
			s.queue.AddAfter(key, wait)
			return nil
		}
		ip, err := s.addressFor(st)
		if err != nil {
			return fmt.Errorf("start pod %s: %w", key, err)
		}
		running := pod.DeepCopy()
		s.setRunningStatus(running, node, ip, now)
		updated, err := s.cfg.Client.CoreV1().Pods(namespace).UpdateStatus(ctx, running, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("report pod %s running: %w", key, err)
		}
		s.mu.Lock()
		st.startedAt = now
		s.mu.Unlock()
		pod = updated
	}
	return s.maybeComplete(ctx, key, pod, st, now)
}

// maybeComplete finishes a running pod when CompletePods says it is time.
func (s *Simulator) maybeComplete(ctx context.Context, key string, pod *corev1.Pod, st *podState, now time.Time) error {
	if s.cfg.CompletePods == nil {
		return nil
	}
	s.mu.Lock()
	if !st.completionDecided {
		s.mu.Unlock()
		// Outside the lock: the callback is the caller's code.
		exitCode, after, ok := s.cfg.CompletePods(pod)
		s.mu.Lock()
		st.completionDecided, st.completes, st.exitCode, st.runFor = true, ok, exitCode, after
	}
	completes, exitCode, started := st.completes, st.exitCode, st.startedAt
	finishAt := started.Add(st.runFor)
	s.mu.Unlock()
	if !completes {
		return nil
	}
	if started.IsZero() && pod.Status.StartTime != nil {
		finishAt = pod.Status.StartTime.Add(st.runFor)
	}
	if wait := finishAt.Sub(now); wait > 0 {
		s.queue.AddAfter(key, wait)
		return nil
	}
	finished := pod.DeepCopy()
	setTerminatedStatus(finished, exitCode, now)
	_, err := s.cfg.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, finished, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("report pod %s finished: %w", key, err)
	}
	s.releaseAddress(key, pod.UID)
	return nil
}

// finishDeletion completes a graceful deletion the way the kubelet does once the pod's containers
// are gone: a delete with grace period 0, guarded by the pod's UID so a new pod of the same name
// is never hit.
func (s *Simulator) finishDeletion(ctx context.Context, key string, pod *corev1.Pod) error {
	s.mu.Lock()
	st := s.pods[key]
	if st != nil && st.uid == pod.UID && st.deleteRequested {
		s.mu.Unlock()
		return nil // pending finalizers; asking again changes nothing
	}
	s.mu.Unlock()
	err := s.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: ptr.To(pod.UID)},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete terminating pod %s: %w", key, err)
	}
	s.mu.Lock()
	if st := s.pods[key]; st != nil && st.uid == pod.UID {
		st.deleteRequested = true
	}
	s.mu.Unlock()
	return nil
}

// track returns the state of pod, starting afresh when the name now holds a different pod.
func (s *Simulator) track(key string, pod *corev1.Pod, node *simNode, now time.Time) *podState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.pods[key]
	if st != nil && st.uid != pod.UID {
		st.node.pods.release(st.ip)
		st = nil
	}
	if st == nil {
		st = &podState{uid: pod.UID, node: node, seenAt: now}
		// A pod already running (this simulator restarted) keeps its address.
		if pod.Status.PodIP != "" && node.pods.claim(pod.Status.PodIP) {
			st.ip = pod.Status.PodIP
		}
		s.pods[key] = st
	}
	return st
}

func (s *Simulator) addressFor(st *podState) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.ip != "" {
		return st.ip, nil
	}
	ip, ok := st.node.pods.allocate()
	if !ok {
		return "", fmt.Errorf("node %s has no free pod address in %s", st.node.name, st.node.pods.prefix)
	}
	st.ip = ip
	return ip, nil
}

// releaseAddress frees a finished pod's address but keeps its state, so it is not claimed again.
func (s *Simulator) releaseAddress(key string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.pods[key]; st != nil && st.uid == uid && st.ip != "" {
		st.node.pods.release(st.ip)
		st.ip = ""
	}
}

// forget drops a pod that is gone.
func (s *Simulator) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.pods[key]; st != nil {
		st.node.pods.release(st.ip)
		delete(s.pods, key)
	}
}

// reportedRunning reports whether pod already carries the status setRunningStatus writes.
func reportedRunning(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" ||
		len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setRunningStatus gives pod the status of a pod whose containers all started and are ready.
func (s *Simulator) setRunningStatus(pod *corev1.Pod, node *simNode, ip string, now time.Time) {
	st := &pod.Status
	at := metav1.NewTime(now)
	st.Phase = corev1.PodRunning
	st.Reason, st.Message = "", ""
	st.HostIP = node.hostIP
	st.HostIPs = []corev1.HostIP{{IP: node.hostIP}}
	st.PodIP = ip
	st.PodIPs = []corev1.PodIP{{IP: ip}}
	if st.StartTime == nil {
		st.StartTime = &at
	}
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		setCondition(st, t, corev1.ConditionTrue, "", at)
	}
	st.InitContainerStatuses = make([]corev1.ContainerStatus, 0, len(pod.Spec.InitContainers))
	for _, c := range pod.Spec.InitContainers {
		cs := containerStatus(pod, c, at)
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			// An ordinary init container ran to completion before the app containers started.
			cs.Ready, cs.Started = true, ptr.To(false)
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: reasonContainerCompleted, StartedAt: at, FinishedAt: at, ContainerID: cs.ContainerID}}
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	st.ContainerStatuses = make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(pod, c, at))
	}
	// The kubelet reports app containers sorted by name.
	slices.SortFunc(st.ContainerStatuses, func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
}

// setTerminatedStatus gives a running pod the status of one whose containers all exited with exitCode.
func setTerminatedStatus(pod *corev1.Pod, exitCode int32, now time.Time) {
	st := &pod.Status
	at := metav1.NewTime(now)
	phase, podReason, containerReason := corev1.PodSucceeded, reasonPodCompleted, reasonContainerCompleted
	if exitCode != 0 {
		phase, podReason, containerReason = corev1.PodFailed, reasonPodFailed, reasonContainerError
	}
	st.Phase = phase
	setCondition(st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", at)
	setCondition(st, corev1.ContainersReady, corev1.ConditionFalse, podReason, at)
	setCondition(st, corev1.PodReady, corev1.ConditionFalse, podReason, at)
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		startedAt := at
		if cs.State.Running != nil {
			startedAt = cs.State.Running.StartedAt
		}
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: containerReason, StartedAt: startedAt, FinishedAt: at, ContainerID: cs.ContainerID}}
		cs.Ready, cs.Started = false, ptr.To(false)
	}
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		if cs.State.Running != nil { // a sidecar stops with its pod
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: reasonContainerCompleted, StartedAt: cs.State.Running.StartedAt, FinishedAt: at,
				ContainerID: cs.ContainerID}}
			cs.Ready, cs.Started = false, ptr.To(false)
		}
	}
}

func containerStatus(pod *corev1.Pod, c corev1.Container, at metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name:         c.Name,
		State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
		Ready:        true,
		RestartCount: 0,
		Image:        c.Image,
		ImageID:      containerIDScheme + "sha256:" + hexDigest(c.Image),
		ContainerID:  containerIDScheme + hexDigest(string(pod.UID)+"/"+c.Name),
		Started:      ptr.To(true),
	}
}

// setCondition sets a pod condition, keeping its transition time when its status does not change.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, status corev1.ConditionStatus, reason string, at metav1.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = at
		}
		c.Status, c.Reason, c.Message = status, reason, ""
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = at
		}
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: at})
}

func hexDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
