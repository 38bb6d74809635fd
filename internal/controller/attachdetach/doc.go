// Package attachdetach is the attach/detach controller, after Kubernetes' controller of that name,
// for CSI volumes: every CSI persistent volume a pod on a node uses (through a claim or a generic
// ephemeral volume) whose driver requires attachment gets a VolumeAttachment (named as upstream
// names it, volumeutil.AttachmentName) that the driver's external-attacher carries out; once no pod
// on the node needs the volume and the kubelet no longer reports it in node.status.volumesInUse,
// the VolumeAttachment is deleted (the attacher detaches, then drops its finalizer). A volume still
// mounted on a node that is not Ready is detached anyway after MaxWaitForUnmount (6 minutes, as
// upstream), and at once on a node tainted node.kubernetes.io/out-of-service. The Node's
// status.volumesAttached lists the attachments the attacher reported attached, which the kubelet
// waits for before it mounts.
//
// Decide is the pure core: a node's pods' volumes, its attachments and its status in, a plan out
// (attachments to make and delete, the node's volumesAttached, Multi-Attach errors, when to look
// again). Only nodes whose kubelet leaves attaching to the controller (the
// volumes.kubernetes.io/controller-managed-attach-detach annotation) get attachments, as upstream.
// CSI ephemeral inline volumes are never attached (upstream's CSI plugin does not attach them).
// The controller reaches the cluster only through client-go.
package attachdetach
