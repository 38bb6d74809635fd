package volumeutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSpecFits(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	claim := func(mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
		for _, m := range mods {
			m(c)
		}
		return c
	}
	volume := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "fast"}},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany},
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
		},
	}
	tests := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		{"fits", claim(), true},
		{"too big", claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("3Gi")
		}), false},
		{"access mode missing", claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}), false},
		{"block claim, filesystem volume", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = &block }), false},
		{"selector matches", claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fast"}}
		}), true},
		{"selector does not match", claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "slow"}}
		}), false},
	}
	for _, tt := range tests {
		if got := SpecFits(tt.pvc, volume); got != tt.want {
			t.Errorf("%s: SpecFits = %v, want %v", tt.name, got, tt.want)
		}
	}
}
