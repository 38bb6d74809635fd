// Package vacprotection is Kubernetes' volumeattributesclass-protection controller: a
// VolumeAttributesClass being deleted keeps its kubernetes.io/vac-protection finalizer, and so
// stays Terminating, while a PersistentVolumeClaim (its spec, its current class or the target of
// a modification in progress) or a PersistentVolume names it; once none does, the controller
// removes the finalizer and the class goes. It also adds the finalizer to live classes that lack
// it (those created before the StorageObjectInUseProtection admission plugin put it on new ones).
//
// Decide and Uses are pure and table-tested. It reaches the cluster only through client-go.
package vacprotection
