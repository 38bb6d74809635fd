package volumeutil

import corev1 "k8s.io/api/core/v1"

// The storage-object-in-use protection finalizers, as Kubernetes names them. The
// StorageObjectInUseProtection admission plugin puts them on new claims, volumes and volume
// attributes classes; the pvc-protection, pv-protection and vac-protection controllers add them to
// objects that predate the plugin and take them off once nothing uses the object any more.
const (
	// PVCProtectionFinalizer keeps a PersistentVolumeClaim while a pod uses it.
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	// PVProtectionFinalizer keeps a PersistentVolume while it is bound to a claim.
	PVProtectionFinalizer = "kubernetes.io/pv-protection"
	// VACProtectionFinalizer keeps a VolumeAttributesClass while a claim or a volume names it.
	VACProtectionFinalizer = "kubernetes.io/vac-protection"
)

// EphemeralClaimName is the name of the claim made for a generic ephemeral volume of pod:
// <pod>-<volume>, as Kubernetes' ephemeral volume controller names it.
func EphemeralClaimName(pod *corev1.Pod, volume *corev1.Volume) string {
	return pod.Name + "-" + volume.Name
}

// PodClaimNames lists the claims pod's volumes name: persistentVolumeClaim volumes by their
// claimName, generic ephemeral volumes by the claim made for them.
func PodClaimNames(pod *corev1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, EphemeralClaimName(pod, v))
		}
	}
	return out
}
