package registry

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The interfaces below are optional: a Strategy (or a subresource's strategy) implements the ones
// whose moment it needs, and the generic store (internal/apiserver/store) calls them. They are the
// hooks of Kubernetes' generic registry Store, declared on the strategy so a resource built at run
// time (a CustomResourceDefinition) is one more strategy and needs no store code of its own.

// FinishFunc ends what a Begin hook started, once the write is known to have succeeded or failed:
// with success false it undoes the hook's side effects (it gives back an allocated cluster IP).
// It is called exactly once per successful Begin call, also for attempts a compare-and-swap retry
// abandoned.
type FinishFunc func(ctx context.Context, success bool)

// BeginCreater is called on create after the strategy prepared and validated obj and admission
// accepted it, just before the write. It may change obj (fill in allocated values). Under dry run
// (options.DryRun non-empty) it must only check, never hold anything.
type BeginCreater interface {
	BeginCreate(ctx context.Context, obj runtime.Object, options *metav1.CreateOptions) (FinishFunc, error)
}

// AfterCreater is called after a create was written (not under dry run), with the stored object.
type AfterCreater interface {
	AfterCreate(ctx context.Context, obj runtime.Object, options *metav1.CreateOptions)
}

// BeginUpdater is called on every update attempt once the stored system fields are carried over to
// obj, before the strategy's PrepareForUpdate. It may change obj. Dry run as for BeginCreater.
type BeginUpdater interface {
	BeginUpdate(ctx context.Context, obj, old runtime.Object, options *metav1.UpdateOptions) (FinishFunc, error)
}

// AfterUpdater is called after an update was written (not under dry run), with the stored object.
type AfterUpdater interface {
	AfterUpdate(ctx context.Context, obj runtime.Object, options *metav1.UpdateOptions)
}

// AfterDeleter is called once an object was removed from storage (not when a delete only set its
// deletionTimestamp, and not under dry run), with its last state.
type AfterDeleter interface {
	AfterDelete(ctx context.Context, obj runtime.Object, options *metav1.DeleteOptions)
}

// DependentsOrphaner is implemented by strategies whose objects orphan their dependents when a
// delete names no propagation (neither propagationPolicy nor orphanDependents, and no GC finalizer
// on the object): Kubernetes' DefaultGarbageCollectionPolicy OrphanDependents, which core/v1
// ReplicationControllers keep for backwards compatibility. The others delete dependents in the
// background.
type DependentsOrphaner interface {
	OrphanDependentsByDefault() bool
}

// DeleteValidator refuses some deletes outright, before the object is read (Kubernetes' immortal
// namespaces default, kube-system and kube-public). The error goes to the client as it is.
type DeleteValidator interface {
	ValidateDelete(ctx context.Context, namespace, name string) error
}

// DeletionHolder is implemented by strategies whose objects outlive a delete for a reason of their own
// beyond metadata.finalizers and grace periods (a namespace with spec.finalizers stays Terminating
// until its content is gone).
type DeletionHolder interface {
	// PrepareForDelete marks obj (a copy of the stored object) as going away in the type's own way,
	// setting deletionTimestamp (now) where it must stay, and reports whether it must stay.
	PrepareForDelete(ctx context.Context, obj runtime.Object, now time.Time) bool
	// HoldsDeletion reports whether obj, already marked for deletion and with no metadata finalizers
	// left, must still stay (the update that removed its last finalizer must not delete it).
	HoldsDeletion(obj runtime.Object) bool
}

// SubresourceStrategy is the update semantics of a subresource that is a view of the whole object
// (status, finalize, and later approval, ephemeralcontainers, resize): PrepareForUpdate keeps from old
// everything the subresource may not change; ValidateUpdate checks the result. It may implement the
// hooks above and ResetFieldsProvider as a Strategy does.
type SubresourceStrategy = StatusStrategy

// Subresource is one "update the object through this strategy" subresource.
type Subresource struct {
	Strategy SubresourceStrategy
	// Verbs lists the verbs served; nil means get, update and patch.
	Verbs []string
}

// SubresourceStrategy returns the strategy a write to subresource goes through: Status for "status",
// otherwise the entry of Subresources. ok is false when the resource has no such subresource.
func (r *Resource) SubresourceStrategy(name string) (strategy SubresourceStrategy, verbs []string, ok bool) {
	if name == "status" && r.Status != nil {
		return r.Status, nil, true
	}
	if sub, found := r.Subresources[name]; found && sub != nil && sub.Strategy != nil {
		return sub.Strategy, sub.Verbs, true
	}
	return nil, nil, false
}
