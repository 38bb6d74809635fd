package metricsserver

import (
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// resources is a usage as a ResourceList: CPU in nanocores (kubectl shows millicores), memory in
// binary bytes, as metrics-server reports them.
func resources(u Usage) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewScaledQuantity(int64(u.CPUNanoCores), -9),
		corev1.ResourceMemory: *resource.NewQuantity(int64(u.Memory), resource.BinarySI),
	}
}

// NodeMetrics is the NodeMetrics of node (its name and labels, so label selectors select nodes)
// for its usage; created is the answer's creation time (now), as metrics-server sets it.
func NodeMetrics(node *corev1.Node, u Usage, created time.Time) *metricsv1beta1.NodeMetrics {
	return &metricsv1beta1.NodeMetrics{
		TypeMeta: metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: metricsv1beta1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{
			Name: node.Name, Labels: maps.Clone(node.Labels), CreationTimestamp: metav1.NewTime(created),
		},
		Timestamp: metav1.NewTime(u.Time),
		Window:    metav1.Duration{Duration: u.Window},
		Usage:     resources(u),
	}
}

// PodMetrics is the PodMetrics of pod (its name, namespace and labels, so that label selectors
// select pods, as the HPA's do) for its containers' usage.
func PodMetrics(pod *corev1.Pod, at time.Time, window time.Duration, containers []ContainerUsage, created time.Time) *metricsv1beta1.PodMetrics {
	out := &metricsv1beta1.PodMetrics{
		TypeMeta: metav1.TypeMeta{Kind: "PodMetrics", APIVersion: metricsv1beta1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, Labels: maps.Clone(pod.Labels), CreationTimestamp: metav1.NewTime(created),
		},
		Timestamp:  metav1.NewTime(at),
		Window:     metav1.Duration{Duration: window},
		Containers: make([]metricsv1beta1.ContainerMetrics, 0, len(containers)),
	}
	for _, c := range containers {
		out.Containers = append(out.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: resources(c.Usage)})
	}
	return out
}
