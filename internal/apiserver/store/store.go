package store

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// Config builds a Store.
type Config struct {
	Resource *registry.Resource
	Storage  storage.Interface
	// Clock stamps creationTimestamp and deletionTimestamp; nil is the real clock.
	Clock clock.PassiveClock
	// NameSuffix makes the random part of a generated name; nil is Kubernetes' five random
	// characters. It is called on every create, so a test may swap what it calls.
	NameSuffix func() string
}

// Store serves one resource on its storage.
type Store struct {
	res        *registry.Resource
	storage    storage.Interface
	clock      clock.PassiveClock
	nameSuffix func() string
	// prefix is the etcd key prefix of the resource, ending in "/".
	prefix string
}

// New builds the store of cfg.Resource.
func New(cfg Config) (*Store, error) {
	res := cfg.Resource
	// A nil Storage is allowed for a store whose writes are only prepared, never made (tests of
	// decoding and validation); any read or write panics.
	if res == nil {
		return nil, errors.New("store: a Resource is required")
	}
	if res.Strategy == nil || res.New == nil || res.NewList == nil {
		return nil, fmt.Errorf("resource %s: Strategy, New and NewList are required", res.GroupResource())
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.NameSuffix == nil {
		cfg.NameSuffix = func() string { return utilrand.String(nameSuffixLength) }
	}
	return &Store{res: res, storage: cfg.Storage, clock: cfg.Clock, nameSuffix: cfg.NameSuffix, prefix: KeyPrefix(res)}, nil
}

// KeyPrefix is the etcd key prefix of res: /registry/<group or "core">/<storage resource>/.
func KeyPrefix(res *registry.Resource) string {
	group := res.GroupVersion.Group
	if res.StorageGroup != "" || res.StorageResource != "" {
		group = res.StorageGroup
	}
	if group == "" {
		group = "core"
	}
	storageResource := res.StorageResource
	if storageResource == "" {
		storageResource = res.Plural
	}
	return "/registry/" + group + "/" + storageResource + "/"
}

// Storage is the storage the store writes to.
func (s *Store) Storage() storage.Interface { return s.storage }

// Resource is the served resource.
func (s *Store) Resource() *registry.Resource { return s.res }

// Key is the etcd key of one object.
func (s *Store) Key(namespace, name string) string {
	if s.res.Namespaced {
		return s.prefix + namespace + "/" + name
	}
	return s.prefix + name
}

// Count is the number of objects in a namespace (all of them for ""), for flow control's width
// estimate of LISTs.
func (s *Store) Count(ctx context.Context, namespace string) (int64, error) {
	return s.storage.Count(ctx, s.collectionPrefix(namespace))
}

// collectionPrefix is the key prefix of a namespace's objects (all of them for "").
func (s *Store) collectionPrefix(namespace string) string {
	if s.res.Namespaced && namespace != "" {
		return s.prefix + namespace + "/"
	}
	return s.prefix
}

func (s *Store) apiError(err error, name string) error {
	return ToAPIError(err, s.res.GroupResource(), name)
}

// Attrs gives the labels and selectable fields of obj: metadata.name, metadata.namespace where the
// resource is namespaced, and the resource's own SelectableFields.
func (s *Store) Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	set := fields.Set{"metadata.name": m.GetName()}
	if s.res.Namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	if s.res.SelectableFields != nil {
		for k, v := range s.res.SelectableFields(obj) {
			set[k] = v
		}
	}
	return labels.Set(m.GetLabels()), set, nil
}

// Get reads one object.
func (s *Store) Get(ctx context.Context, namespace, name string, opts storage.GetOptions) (runtime.Object, error) {
	obj := s.res.New()
	if err := s.storage.Get(ctx, s.Key(namespace, name), opts, obj); err != nil {
		return nil, s.apiError(err, name)
	}
	return obj, nil
}

// List reads the objects of namespace ("" for all) that opts selects.
func (s *Store) List(ctx context.Context, namespace string, opts storage.ListOptions) (runtime.Object, error) {
	if opts.Predicate.Attrs == nil {
		opts.Predicate.Attrs = s.Attrs
	}
	list := s.res.NewList()
	if err := s.storage.List(ctx, s.collectionPrefix(namespace), opts, list); err != nil {
		return nil, s.apiError(err, "")
	}
	return list, nil
}

// Watch streams changes of namespace's objects, or of the one named object when name is set.
func (s *Store) Watch(ctx context.Context, namespace, name string, opts storage.ListOptions) (watch.Interface, error) {
	if opts.Predicate.Attrs == nil {
		opts.Predicate.Attrs = s.Attrs
	}
	prefix := s.collectionPrefix(namespace)
	if name != "" {
		prefix = s.Key(namespace, name)
	}
	w, err := s.storage.Watch(ctx, prefix, opts)
	if err != nil {
		return nil, s.apiError(err, name)
	}
	return w, nil
}

// GuaranteedUpdate changes a stored object with tryUpdate and no strategy, admission or hooks: the
// write of a subresource that is an action rather than a view (pods/binding), or of the API server's
// own bookkeeping (a PodDisruptionBudget's disruptions). preconditions are checked against the
// current object on every attempt. With dryRun nothing is written.
func (s *Store) GuaranteedUpdate(ctx context.Context, namespace, name string, preconditions *metav1.Preconditions, dryRun bool,
	tryUpdate storage.UpdateFunc) (runtime.Object, error) {
	return s.guaranteedUpdate(ctx, namespace, name, preconditions, dryRun, tryUpdate, s.res.New())
}

// Modify is GuaranteedUpdate for a caller that does not need the stored result (a binding
// answers with a Status): the store does not decode it.
func (s *Store) Modify(ctx context.Context, namespace, name string, preconditions *metav1.Preconditions, dryRun bool,
	tryUpdate storage.UpdateFunc) error {
	_, err := s.guaranteedUpdate(ctx, namespace, name, preconditions, dryRun, tryUpdate, nil)
	return err
}

// guaranteedUpdate returns the result in out, unless out is nil (then nothing is decoded, and
// only a dry run returns an object: the one it would have written).
func (s *Store) guaranteedUpdate(ctx context.Context, namespace, name string, preconditions *metav1.Preconditions, dryRun bool,
	tryUpdate storage.UpdateFunc, out runtime.Object) (runtime.Object, error) {
	gr := s.res.GroupResource()
	attempt := func(current runtime.Object) (runtime.Object, error) {
		m, err := meta.Accessor(current)
		if err != nil {
			return nil, err
		}
		if err := checkPreconditions(gr, name, preconditions, m); err != nil {
			return nil, err
		}
		return tryUpdate(current)
	}
	if dryRun {
		current, err := s.Get(ctx, namespace, name, storage.GetOptions{})
		if err != nil {
			return nil, err
		}
		return attempt(current)
	}
	if err := s.storage.GuaranteedUpdate(ctx, s.Key(namespace, name), out, false, nil, attempt); err != nil {
		return nil, s.apiError(err, name)
	}
	return out, nil
}
