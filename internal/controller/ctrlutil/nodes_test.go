package ctrlutil

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeHeartbeatOnly(t *testing.T) {
	base := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1", Labels: map[string]string{"zone": "z1"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.NewTime(time.Unix(100, 0))}}}}
	tests := []struct {
		name   string
		change func(n *corev1.Node)
		want   bool
	}{
		{"heartbeat", func(n *corev1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Unix(110, 0))
		}, true},
		{"not ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, false},
		{"label", func(n *corev1.Node) { n.Labels["zone"] = "z2" }, false},
		{"taint", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }, false},
		{"allocatable", func(n *corev1.Node) {
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		}, false},
		{"new condition", func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse})
		}, false},
	}
	for _, tt := range tests {
		n := base.DeepCopy()
		n.Labels = map[string]string{"zone": "z1"}
		tt.change(n)
		if got := NodeHeartbeatOnly(base, n); got != tt.want {
			t.Errorf("%s: heartbeat only = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIsNodeReady(t *testing.T) {
	withReady := func(s corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue},
			{Type: corev1.NodeReady, Status: s},
		}}}
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"Ready True", withReady(corev1.ConditionTrue), true},
		{"Ready False", withReady(corev1.ConditionFalse), false},
		{"Ready Unknown", withReady(corev1.ConditionUnknown), false},
		{"no conditions yet", &corev1.Node{}, false},
	} {
		if got := IsNodeReady(tc.node); got != tc.want {
			t.Errorf("%s: IsNodeReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}
