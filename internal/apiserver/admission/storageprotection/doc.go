// Package storageprotection is Kubernetes' StorageObjectInUseProtection admission plugin: a new
// PersistentVolumeClaim gets the kubernetes.io/pvc-protection finalizer and a new PersistentVolume
// kubernetes.io/pv-protection, so that deleting one that is still in use only marks it Terminating
// until the pvc-protection or pv-protection controller sees it unused and removes the finalizer.
//
// Only creates are changed: a finalizer taken off later (by the controllers, or by a user) is not
// put back by an update. Objects that predate the plugin get theirs from the controllers. The
// plugin reads nothing and refuses nothing.
package storageprotection
