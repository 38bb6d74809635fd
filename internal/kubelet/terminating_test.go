package kubelet

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A deleted pod whose preStop hook takes its time keeps being probed for readiness and its status
// written: when its readiness probe fails the pod reads not ready (upstream's "should not be able
// to connect to terminating and unready endpoints if PublishNotReadyAddresses is false" waits for
// that), its liveness probe stops (a container shutting down is not restarted), and once the
// hook returns the pod is stopped and deleted as before.
func TestTerminatingPodReportsReadiness(t *testing.T) {
	h := newHarness(t, nil)
	exec := func(cmd string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}, PeriodSeconds: 1}
	}
	release := h.runtime.HoldExec("drain")
	defer release()
	h.create(makePod("draining").container(corev1.Container{Name: "app",
		ReadinessProbe: exec("ready-check"), LivenessProbe: exec("live-check"),
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}}},
	}).obj())
	ready := func(p *corev1.Pod) bool {
		c := conditionOf(p, corev1.PodReady)
		return c != nil && c.Status == corev1.ConditionTrue
	}
	pod := h.waitPodStepping("default", "draining", "ready", ready)

	now := metav1.NewTime(h.clock.Now())
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, ptr.To[int64](300)
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("preStop hook running", func() bool {
		return hasCall(h.runtime.CallsTo("ExecSync"), "app:drain")
	})
	livenessBefore := countCalls(h.runtime.CallsTo("ExecSync"), "app:live-check")
	h.runtime.SetExecExitCode("ready-check", 1)
	terminating := h.waitPodStepping("default", "draining", "not ready while terminating", func(p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil && !ready(p)
	})
	if s := statusOf(terminating, "app"); s == nil || s.Ready || s.State.Running == nil {
		t.Errorf("container status while its preStop hook runs = %+v, want running and not ready", s)
	}
	if c := conditionOf(terminating, corev1.ContainersReady); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("ContainersReady = %+v, want False", c)
	}
	if got := countCalls(h.runtime.CallsTo("ExecSync"), "app:live-check"); got > livenessBefore+1 {
		// One liveness probe may have been under way when the pod was deleted.
		t.Errorf("liveness probed %d times after the deletion, want it stopped", got-livenessBefore)
	}
	release()
	h.eventually("pod deleted by the kubelet", func() bool { return h.pod("default", "draining") == nil })
	h.eventually("sandbox removed", func() bool { all, _ := h.runtime.SandboxCount(); return all == 0 })
}

func hasCall(calls []string, target string) bool { return countCalls(calls, target) > 0 }

func countCalls(calls []string, target string) int {
	n := 0
	for _, c := range calls {
		if c == target {
			n++
		}
	}
	return n
}
