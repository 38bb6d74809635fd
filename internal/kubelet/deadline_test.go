package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestActiveDeadline(t *testing.T) {
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	pod := func(deadline *int64, started bool) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: deadline}}
		if started {
			p.Status.StartTime = &metav1.Time{Time: start}
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		now      time.Time
		exceeded bool
		left     time.Duration
	}{
		{"no deadline", pod(nil, true), start.Add(time.Hour), false, 0},
		{"not started", pod(ptr.To[int64](5), false), start.Add(time.Hour), false, 0},
		{"within", pod(ptr.To[int64](30), true), start.Add(10 * time.Second), false, 20 * time.Second},
		{"at the deadline", pod(ptr.To[int64](30), true), start.Add(30 * time.Second), true, 0},
		{"past", pod(ptr.To[int64](5), true), start.Add(time.Minute), true, 0},
	} {
		exceeded, left := activeDeadline(tc.pod, tc.now)
		if exceeded != tc.exceeded || left != tc.left {
			t.Errorf("%s: activeDeadline = %v, %s; want %v, %s", tc.name, exceeded, left, tc.exceeded, tc.left)
		}
	}
}

// TestActiveDeadlineFailsThePod: a running pod whose activeDeadlineSeconds passes is stopped and
// ends Failed with reason DeadlineExceeded, as Kubernetes' kubelet does.
func TestActiveDeadlineFailsThePod(t *testing.T) {
	h := newHarness(t, nil)
	p := makePod("limited").obj()
	p.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	h.create(p)
	h.waitPod("default", "limited", "running", podRunning)
	h.eventually("container running", func() bool { return h.runtime.RunningContainer("uid-limited", "app") != "" })
	h.step(31 * time.Second)
	pod := h.waitPodStepping("default", "limited", "failed past its deadline", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if pod.Status.Reason != deadlineExceededReason || pod.Status.Message != deadlineExceededMessage {
		t.Errorf("status reason %q message %q", pod.Status.Reason, pod.Status.Message)
	}
	h.eventually("container stopped", func() bool { return h.runtime.RunningContainer("uid-limited", "app") == "" })
}
