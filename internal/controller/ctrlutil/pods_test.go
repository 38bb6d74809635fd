package ctrlutil

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func readySince(sec int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Unix(sec, 0))}}
	}
}

func TestSortPodsForDeletion(t *testing.T) {
	tests := []struct {
		name       string
		pods       []*corev1.Pod
		podsOnNode map[string]int
		want       []string
	}{
		{name: "unscheduled first", pods: []*corev1.Pod{pod("sched", readySince(1)), pod("unsched", func(p *corev1.Pod) { p.Spec.NodeName = ""; p.Status.Phase = corev1.PodPending })}, want: []string{"unsched", "sched"}},
		{name: "pending before unknown before running", pods: []*corev1.Pod{
			pod("running"), pod("unknown", func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }), pod("pending", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })},
			want: []string{"pending", "unknown", "running"}},
		{name: "not ready before ready", pods: []*corev1.Pod{pod("ready", readySince(1)), pod("notready")}, want: []string{"notready", "ready"}},
		{name: "lower deletion cost first", pods: []*corev1.Pod{
			pod("expensive", readySince(1), func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotation: "100"} }),
			pod("cheap", readySince(1), func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotation: "-5"} })},
			want: []string{"cheap", "expensive"}},
		{name: "crowded node first", pods: []*corev1.Pod{pod("alone", readySince(1), func(p *corev1.Pod) { p.Spec.NodeName = "n2" }), pod("crowded", readySince(1))},
			podsOnNode: map[string]int{"n1": 3, "n2": 1}, want: []string{"crowded", "alone"}},
		{name: "ready more recently first", pods: []*corev1.Pod{pod("old", readySince(1)), pod("recent", readySince(50))}, want: []string{"recent", "old"}},
		{name: "more restarts first", pods: []*corev1.Pod{pod("calm"), pod("crashy", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: 4}}
		})}, want: []string{"crashy", "calm"}},
		{name: "newer first", pods: []*corev1.Pod{pod("older"), pod("newer", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(time.Unix(2000, 0)) })}, want: []string{"newer", "older"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SortPodsForDeletion(tt.pods, tt.podsOnNode)
			var got []string
			for _, p := range tt.pods {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsPodAvailable(t *testing.T) {
	now := time.Unix(100, 0)
	tests := []struct {
		name     string
		pod      *corev1.Pod
		minReady int32
		want     bool
		wantIn   time.Duration
	}{
		{"not ready", pod("p"), 0, false, 0},
		{"ready, no minReady", pod("p", readySince(99)), 0, true, 0},
		{"ready too recently", pod("p", readySince(95)), 10, false, 6 * time.Second},
		{"ready long enough", pod("p", readySince(80)), 10, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsPodAvailable(tt.pod, tt.minReady, now); got != tt.want {
				t.Fatalf("available = %v", got)
			}
			if got := AvailableIn(tt.pod, tt.minReady, now); got != tt.wantIn {
				t.Fatalf("available in = %v, want %v", got, tt.wantIn)
			}
		})
	}
}
