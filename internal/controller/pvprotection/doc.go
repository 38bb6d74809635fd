// Package pvprotection is Kubernetes' pv-protection controller: a PersistentVolume being deleted
// keeps its kubernetes.io/pv-protection finalizer, and so stays Terminating, while its
// status.phase is Bound; once the persistentvolume-binder marks it Released (its claim gone) or it
// was never bound, the controller removes the finalizer and the volume goes. It also adds the
// finalizer to live volumes that lack it (those created before the StorageObjectInUseProtection
// admission plugin put it on new ones).
//
// The rule is upstream's: the phase alone says whether the volume is in use, as the binder keeps
// it. Decide is pure and table-tested. It reaches the cluster only through client-go.
package pvprotection
