// Package pvbinder binds PersistentVolumeClaims to PersistentVolumes, as Kubernetes' persistent
// volume controller does for statically provisioned volumes: a pending claim gets the smallest
// available volume of its storage class that offers its access modes, volume mode and capacity (or
// the volume it names), and both sides are marked Bound. Claims of a WaitForFirstConsumer class are
// bound only to a volume already pointed at them (by the scheduler's VolumeBinding, or provisioned
// for them), as Kubernetes delays their binding until a pod picks a node. A claim no volume
// satisfies is handed to its class's provisioner with volume.kubernetes.io/storage-provisioner
// (for a WaitForFirstConsumer class once the scheduler set volume.kubernetes.io/selected-node), which
// is what external provisioners such as csi-provisioner act on; the volume they make arrives pointed
// at the claim and is bound here, and the Released phase a deleted claim leaves is their cue to
// delete a Delete-policy volume. It reaches the cluster only through client-go and does not
// provision volumes itself (localpath does, for skiff's own class).
package pvbinder
