package volumeutil

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodClaimNames(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "a", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
	}}}
	if got, want := PodClaimNames(pod), []string{"data", "web-scratch"}; !slices.Equal(got, want) {
		t.Errorf("PodClaimNames = %q, want %q", got, want)
	}
	if got := PodClaimNames(&corev1.Pod{}); len(got) != 0 {
		t.Errorf("a pod without volumes names %q", got)
	}
}
