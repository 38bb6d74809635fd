// Package pvcprotection is Kubernetes' pvc-protection controller: a PersistentVolumeClaim being
// deleted keeps its kubernetes.io/pvc-protection finalizer, and so stays Terminating, while a pod
// scheduled to a node uses it; once none does the controller removes the finalizer and the claim
// goes. It also adds the finalizer to live claims that lack it (those created before the
// StorageObjectInUseProtection admission plugin put it on new ones).
//
// The rule is upstream's: a scheduled pod uses a claim it names in a persistentVolumeClaim volume
// (whatever its phase: a finished pod that still exists keeps its claims), or the claim of a generic
// ephemeral volume (<pod>-<volume>, owned by the pod) unless the pod was force-deleted or is past
// its grace period. An unscheduled pod uses nothing: the scheduler refuses a claim being deleted.
//
// Decide and PodUsesClaim are pure and table-tested. The reconcile asks the informer's cache first
// and, when the cache shows no user, a live LIST of the namespace's pods before it removes the
// finalizer, because a pod just created may not be in the cache yet. A pod that stops being able to
// hold a claim (deleted, finished, shutting down) enqueues the claims it names. It reaches the
// cluster only through client-go.
package pvcprotection
