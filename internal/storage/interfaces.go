package storage

import (
	"context"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Interface is the typed object store the API server's registry sits on. Keys are full etcd keys
// (for example "/registry/pods/default/web-0"); list and watch take a key prefix ending in "/".
// Every object read back carries metadata.resourceVersion = the etcd mod revision of its key, and every
// list carries the etcd revision the list was read at.
type Interface interface {
	// Create stores obj at key if the key is absent; otherwise it returns an error for which IsExists is
	// true. out receives the stored object with its resourceVersion set. obj must have an empty
	// resourceVersion.
	Create(ctx context.Context, key string, obj, out runtime.Object) error

	// Get reads key into out. A missing key is an error for which IsNotFound is true.
	// opts.ResourceVersion "" reads the latest; "0" may be served from any recent state; an exact
	// revision reads the key as of that revision (too old: IsExpired).
	Get(ctx context.Context, key string, opts GetOptions, out runtime.Object) error

	// List reads every object under prefix that matches opts.Predicate into listObj (a *XList whose Items
	// are set through meta.SetList). Pagination: opts.Predicate.Limit > 0 returns at most that many
	// matching items and, when more remain, a continue token in the list metadata; a continue token pins
	// every page to the revision of the first page (410 Expired once compacted).
	List(ctx context.Context, prefix string, opts ListOptions, listObj runtime.Object) error

	// GuaranteedUpdate reads key, calls tryUpdate with the current object (a fresh copy it may mutate) and
	// writes the result with a compare-and-swap on the key's mod revision, retrying tryUpdate when another
	// writer got there first. preconditions (uid, resourceVersion) are checked against the current object
	// on every attempt: a resourceVersion precondition that does not match is a Conflict error. When the
	// key is missing and ignoreNotFound is true, tryUpdate is called with a zero object (created from the
	// type of dest); otherwise the call fails with NotFound. tryUpdate returning the input unchanged
	// (semantically deep-equal bytes) writes nothing and returns the current object. dest receives the
	// stored result; it may be nil when the caller has no use for it (no decode is spent on it).
	GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
		preconditions *Preconditions, tryUpdate UpdateFunc) error

	// Delete removes key if preconditions hold and validateDeletion (may be nil) accepts the current
	// object, with a compare-and-swap on the revision that was checked. out receives the last state.
	Delete(ctx context.Context, key string, out runtime.Object, preconditions *Preconditions,
		validateDeletion ValidateObjectFunc) error

	// Watch streams changes under prefix (or of the single key when opts.Recursive is false) that match
	// opts.Predicate. opts.ResourceVersion "" or "0": first an ADDED event per existing object (at one
	// revision), then changes after it. An exact revision: changes after that revision; a compacted
	// revision gives an Expired error (before any event, or as a watch.Error event carrying a
	// *metav1.Status with code 410). opts.ProgressNotify asks for BOOKMARK events carrying only the
	// current resourceVersion, sent when the watch has been idle. Objects that stop matching the
	// predicate are sent as DELETED, objects that start matching as ADDED (as Kubernetes does).
	Watch(ctx context.Context, prefix string, opts ListOptions) (watch.Interface, error)

	// Count returns the number of keys under prefix (for metrics and quota).
	Count(ctx context.Context, prefix string) (int64, error)

	// CurrentRevision is the store's latest revision (for list responses of empty collections and
	// bookmarks).
	CurrentRevision(ctx context.Context) (int64, error)

	// Ready reports whether the backing etcd answers (for /readyz).
	Ready(ctx context.Context) error
}

// CachedUpdater is a store whose GuaranteedUpdate can start from a copy of the key's object that
// the caller believes current (the watch cache's), instead of reading the key first. The
// compare-and-swap still guards the write, so a copy that is behind costs a retry, never a lost
// update; a precondition or tryUpdate error, and an update that changes nothing, are confirmed on
// the stored object before they are returned. cached is shared: the store must not modify it.
type CachedUpdater interface {
	GuaranteedUpdateFrom(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
		preconditions *Preconditions, tryUpdate UpdateFunc, cached runtime.Object) error
}

// UpdateFunc computes the next state from the current one. Returning an error aborts the update and
// the error is returned unchanged to the caller.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// ValidateObjectFunc vets the current object before a delete; an error aborts and is returned unchanged.
type ValidateObjectFunc func(ctx context.Context, current runtime.Object) error

// Preconditions are checked against the stored object before an update or delete.
type Preconditions struct {
	UID             *types.UID
	ResourceVersion *string
}

// GetOptions tune a single-object read.
type GetOptions struct {
	ResourceVersion string
	IgnoreNotFound  bool
}

// ListOptions tune list and watch.
type ListOptions struct {
	// ResourceVersion and ResourceVersionMatch follow Kubernetes' list semantics: "" is a consistent read
	// of the latest state; "0" is "any state" (served as latest here); an exact revision with match
	// "Exact" reads at that revision; with match "NotOlderThan" (or none) at least that revision.
	ResourceVersion      string
	ResourceVersionMatch string
	Predicate            Predicate
	// Recursive is true for collection watches/lists (prefix) and false for a single key.
	Recursive bool
	// ProgressNotify asks for bookmark events (watch only).
	ProgressNotify bool
	// SendInitialEvents (watch only): with true, existing objects are sent as ADDED events first
	// and then a BOOKMARK annotated "k8s.io/initial-events-end": "true", as the WatchList feature defines.
	SendInitialEvents *bool
}

// Predicate selects objects by labels and fields. Attrs extracts an object's labels and selectable
// fields; nil Label/Field selectors select everything.
type Predicate struct {
	Label    labels.Selector
	Field    fields.Selector
	Limit    int64
	Continue string
	Attrs    AttrFunc
}

// AttrFunc returns the labels and field set of an object, used to evaluate selectors.
type AttrFunc func(obj runtime.Object) (labels.Set, fields.Set, error)

// Empty reports whether the predicate selects everything.
func (p Predicate) Empty() bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// Matches reports whether obj is selected by the predicate.
func (p Predicate) Matches(obj runtime.Object) (bool, error) {
	if p.Empty() {
		return true, nil
	}
	if p.Attrs == nil {
		return false, nil
	}
	lbls, flds, err := p.Attrs(obj)
	if err != nil {
		return false, err
	}
	if p.Label != nil && !p.Label.Empty() && !p.Label.Matches(lbls) {
		return false, nil
	}
	if p.Field != nil && !p.Field.Empty() && !p.Field.Matches(flds) {
		return false, nil
	}
	return true, nil
}
