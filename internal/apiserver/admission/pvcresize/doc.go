// Package pvcresize is Kubernetes' PersistentVolumeClaimResize admission plugin: a claim's storage
// request may grow only when the claim is bound and its StorageClass (the same before and after)
// says allowVolumeExpansion: true; anything else is Forbidden, with upstream's messages. Shrinking
// and every other change are the registry's to judge; the status subresource (where resizers write
// allocatedResources and conditions) is not looked at. Expansion itself is the resizer's (a CSI
// driver's external-resizer) and the kubelet's.
package pvcresize
