// Package ephemeral is Kubernetes' ephemeral volume controller: for every generic ephemeral volume
// of a pod (spec.volumes[].ephemeral) it makes the PersistentVolumeClaim <pod>-<volume> from the
// volume's claim template, owned by the pod (controller, blockOwnerDeletion), so the claim is
// provisioned and bound like any other and the garbage collector deletes it with the pod. A claim
// of that name the pod does not own is not taken over: the pod is told (FailedBinding) and cannot
// start, as upstream. Pods being deleted are left alone; a claim deleted while its pod lives is made
// again. Decide is the pure core; the controller reaches the cluster only through client-go.
package ephemeral
