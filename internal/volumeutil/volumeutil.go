package volumeutil

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// SpecFits reports whether pv's spec can serve pvc, as Kubernetes matches them: the same volume
// mode (Filesystem when unset), every access mode the claim asks for, the claim's label selector,
// and at least the requested storage. Class, phase and pre-binding are the callers' own rules.
func SpecFits(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	if volumeMode(pvc.Spec.VolumeMode) != volumeMode(pv.Spec.VolumeMode) {
		return false
	}
	for _, m := range pvc.Spec.AccessModes {
		if !slices.Contains(pv.Spec.AccessModes, m) {
			return false
		}
	}
	if sel := pvc.Spec.Selector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || !s.Matches(labels.Set(pv.Labels)) {
			return false
		}
	}
	want, have := pvc.Spec.Resources.Requests[corev1.ResourceStorage], pv.Spec.Capacity[corev1.ResourceStorage]
	return have.Cmp(want) >= 0
}

func volumeMode(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}
