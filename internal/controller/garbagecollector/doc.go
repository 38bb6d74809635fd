// Package garbagecollector deletes objects whose owners are gone, following
// ownerReferences across every served resource (found through discovery and
// watched with dynamic informers). It implements the three propagation
// policies: background (dependants of a deleted owner are deleted once the
// owner is gone), foreground (an owner carrying the foregroundDeletion
// finalizer waits until its blockOwnerDeletion dependants are gone, then the
// finalizer is removed) and orphan (the orphan finalizer makes it strip its
// ownerReferences from the dependants first). Dangling references are
// removed when another owner still holds the object.
//
// Each reconcile is level-triggered over one object; the ownership graph is
// the informers' caches indexed by owner UID, not a separate structure. It
// reaches the cluster only through client-go.
package garbagecollector
