package storage

import (
	"context"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SharedLister is implemented by stores that can answer a list with the objects they already hold in
// memory (the watch cache), without copying or re-encoding them per request.
type SharedLister interface {
	// ListShared answers like List. served is false when the store cannot answer from memory
	// (not ready, a revision it does not hold, options it leaves to etcd): the caller then calls List.
	ListShared(ctx context.Context, prefix string, opts ListOptions) (list *SharedList, served bool, err error)
}

// SharedList is a list page whose items belong to the store: they must not be mutated.
type SharedList struct {
	Items              []SharedObject
	ResourceVersion    string
	Continue           string
	RemainingItemCount *int64
}

// SharedObject is one object version held by a store, with its encodings memoized: each wire form
// is encoded once per object version and reused by every response that sends it.
type SharedObject interface {
	// Object is the stored object. It must not be mutated.
	Object() runtime.Object
	// Encoded returns the bytes encode writes for the object, computed on the first call for id
	// (one id per wire form: media type, version, with or without type metadata) and memoized
	// while the object version stays in the store and the store's memory bound allows.
	Encoded(id string, encode func(obj runtime.Object, w io.Writer) error) ([]byte, error)
}

// ProgressRequester is implemented by stores whose watches can be asked to report the store's
// current revision (etcd's progress request): a cache waiting to catch up with a revision asks for it
// rather than waiting for the next periodic progress notification.
type ProgressRequester interface {
	RequestWatchProgress(ctx context.Context) error
	// WatchProgressSupported says whether the store's progress notifications may be believed
	// (etcd before 3.4.31 or 3.5.13 may send one ahead of its events): when not, a cache does
	// not wait on them and the store answers.
	WatchProgressSupported(ctx context.Context) bool
}

// RevisionKeeper is implemented by stores that can tell whether a past revision can still be read
// (etcd: it has not been compacted away). A cache that holds older states in its history asks
// before answering at one of them, so a continue token expires when etcd compacts its revision,
// as Kubernetes clients expect (a 410 with an inconsistent-continue token), not when the cache's
// history happens to roll over.
type RevisionKeeper interface {
	RevisionAvailable(ctx context.Context, rev int64) (bool, error)
}

// ObjectSharer is implemented by watches that can send the store's own objects, with memoized
// encodings, instead of a copy per watcher. After ShareObjects, events may carry a
// *SharedEventObject, which the receiver must not mutate; events read before may still be copies.
type ObjectSharer interface {
	ShareObjects()
}

// SharedEventObject is a shared watch event object: encode it through Encoded (one encoding per
// wire form for every watcher that sends it), or DeepCopyObject it to get an object of one's own.
type SharedEventObject struct {
	SharedObject
}

// GetObjectKind implements runtime.Object: the shared object's type metadata is not to be set.
func (o *SharedEventObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object: a copy of the shared object itself (not of the wrapper).
func (o *SharedEventObject) DeepCopyObject() runtime.Object { return o.Object().DeepCopyObject() }
