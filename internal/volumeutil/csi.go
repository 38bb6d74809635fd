package volumeutil

import (
	"crypto/sha256"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// The names the attach/detach controller and the kubelet agree on for CSI volumes, as Kubernetes
// spells them: the kubelet reports a mounted volume in node.status.volumesInUse and finds an
// attached one in node.status.volumesAttached under its unique name, and waits for the
// VolumeAttachment named by AttachmentName to say attached.
const (
	// CSIPluginName is the in-tree name of the CSI volume plugin, the prefix of every CSI volume's
	// unique name.
	CSIPluginName = "kubernetes.io/csi"
	// AnnControllerManagedAttachDetach on a Node says its kubelet leaves attach and detach to the
	// attach/detach controller (a kubelet with enableControllerAttachDetach, the default, sets it).
	AnnControllerManagedAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"
)

// CSIUniqueVolumeName is the unique name of a CSI volume: kubernetes.io/csi/<driver>^<volumeHandle>,
// the name node.status.volumesInUse and volumesAttached carry.
func CSIUniqueVolumeName(driver, volumeHandle string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName(CSIPluginName + "/" + driver + "^" + volumeHandle)
}

// AttachmentName is the name of the VolumeAttachment of a CSI volume to a node:
// csi-<hex sha256 of volumeHandle+driver+nodeName>, so the controller that makes it and the kubelet
// that waits for it find the same object.
func AttachmentName(volumeHandle, driver, nodeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(volumeHandle+driver+nodeName)))
}

// AttachRequired reports whether a CSI driver's volumes must be attached (a VolumeAttachment made
// and reported attached) before the kubelet may use them: what its CSIDriver says, true when the
// CSIDriver object is missing or leaves it unset, as Kubernetes decides.
func AttachRequired(driver *storagev1.CSIDriver) bool {
	if driver == nil || driver.Spec.AttachRequired == nil {
		return true
	}
	return *driver.Spec.AttachRequired
}
