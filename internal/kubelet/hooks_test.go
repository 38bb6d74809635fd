package kubelet

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPreStopHookRunsBeforeStop(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("hooked").container(corev1.Container{Name: "app", Lifecycle: &corev1.Lifecycle{
		PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}},
	}}).obj())
	pod := h.waitPod("default", "hooked", "running", podRunning)
	now := metav1.NewTime(h.clock.Now())
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, ptr.To[int64](5)
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("pod deleted", func() bool { return h.pod("default", "hooked") == nil })
	var order []string
	for _, c := range h.runtime.Calls() {
		if c.Method == "ExecSync" || c.Method == "StopContainer" {
			order = append(order, c.Method+" "+c.Target)
		}
	}
	if !slices.Equal(order, []string{"ExecSync app:drain", "StopContainer app"}) {
		t.Errorf("calls = %v, want the preStop hook before the stop", order)
	}
}

func TestFailingPostStartHookRestartsContainer(t *testing.T) {
	h := newHarness(t, nil)
	h.runtime.SetExecExitCode("warm-up", 1)
	h.create(makePod("warm").container(corev1.Container{Name: "app", Lifecycle: &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"warm-up"}}},
	}}).obj())
	h.eventually("hook failure", func() bool { return h.hasEvent("Warning FailedPostStartHook PostStartHook failed") })
	h.runtime.SetExecExitCode("warm-up", 0)
	h.step(time.Second)
	h.waitPodStepping("default", "warm", "restarted and running", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return podRunning(p) && s.RestartCount >= 1 && s.State.Running != nil
	})
}
