// Package volumeutil holds the volume rules that both the persistentvolume-binder controller and the
// scheduler's VolumeBinding plugin apply, so that the volume the scheduler plans for a claim is the
// one the binder would choose; the names of the claims a pod's volumes use; and the names of the
// storage protection finalizers that admission sets and the pvc-protection and pv-protection
// controllers remove; and the names the attach/detach controller and the kubelet agree on for CSI
// volumes (unique volume names, VolumeAttachment names). It depends only on the API types.
package volumeutil
