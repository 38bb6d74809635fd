package podautoscaler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

func TestPodResourceMetrics(t *testing.T) {
	ts := metav1.NewTime(now)
	pm := func(name string, containers ...metricsv1beta1.ContainerMetrics) metricsv1beta1.PodMetrics {
		return metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: name}, Timestamp: ts, Window: metav1.Duration{Duration: 30 * time.Second}, Containers: containers}
	}
	cm := func(name, cpu string) metricsv1beta1.ContainerMetrics {
		u := corev1.ResourceList{}
		if cpu != "" {
			u[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		return metricsv1beta1.ContainerMetrics{Name: name, Usage: u}
	}
	items := []metricsv1beta1.PodMetrics{
		pm("two", cm("app", "300m"), cm("proxy", "100m")),
		pm("partial", cm("app", "300m"), cm("proxy", "")),
		pm("empty"),
	}
	tests := []struct {
		name      string
		container string
		want      map[string]int64
	}{
		{"pods sum their containers; incomplete pods are left out", "", map[string]int64{"two": 400}},
		{"one container is taken alone", "app", map[string]int64{"two": 300, "partial": 300}},
		{"pods without the container are left out", "db", map[string]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podResourceMetrics(items, corev1.ResourceCPU, tt.container)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for name, v := range tt.want {
				if got[name].Value != v || got[name].Window != 30*time.Second || !got[name].Timestamp.Equal(now) {
					t.Errorf("%s: got %+v, want value %d", name, got[name], v)
				}
			}
		})
	}
}
