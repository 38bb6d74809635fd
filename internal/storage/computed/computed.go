package computed

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
)

// ListFunc produces the current objects. It runs on every get and list, so it should be cheap.
type ListFunc func(ctx context.Context) ([]runtime.Object, error)

// Store serves the objects of a ListFunc. Keys are matched by their last segment, the object's
// name: computed resources are cluster-scoped.
type Store struct {
	list ListFunc
	// ready reports whether the store can answer; nil means always.
	ready func(ctx context.Context) error
}

var _ storage.Interface = &Store{}

// New returns a store over list; ready (may be nil) answers Ready.
func New(list ListFunc, ready func(ctx context.Context) error) *Store {
	return &Store{list: list, ready: ready}
}

// Get finds the object named by the key's last segment.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	objs, err := s.list(ctx)
	if err != nil {
		return fmt.Errorf("compute %s: %w", key, err)
	}
	name := key[strings.LastIndex(key, "/")+1:]
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			return fmt.Errorf("compute %s: %w", key, err)
		}
		if m.GetName() == name {
			return copyInto(obj, out)
		}
	}
	if opts.IgnoreNotFound {
		return nil
	}
	return storage.NewError(storage.ErrCodeNotFound, key, "", nil)
}

// List returns every object the predicate selects, in the order the ListFunc gives; limits and
// continue tokens are ignored (the lists are a handful of objects).
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions, listObj runtime.Object) error {
	objs, err := s.list(ctx)
	if err != nil {
		return fmt.Errorf("compute %s: %w", prefix, err)
	}
	var items []runtime.Object
	for _, obj := range objs {
		ok, err := opts.Predicate.Matches(obj)
		if err != nil {
			return fmt.Errorf("compute %s: evaluate selectors: %w", prefix, err)
		}
		if ok {
			items = append(items, obj.DeepCopyObject())
		}
	}
	if err := meta.SetList(listObj, items); err != nil {
		return fmt.Errorf("compute %s: %w", prefix, err)
	}
	return nil
}

func copyInto(obj, out runtime.Object) error {
	src, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(src, out)
}

// errReadOnly is returned by every write and by Watch.
func errReadOnly(op, key string) error {
	return fmt.Errorf("%s %s: computed resources are read-only and cannot be watched", op, key)
}

// Create fails: computed objects cannot be written.
func (s *Store) Create(_ context.Context, key string, _, _ runtime.Object) error {
	return errReadOnly(storage.OpCreate, key)
}

// GuaranteedUpdate fails: computed objects cannot be written.
func (s *Store) GuaranteedUpdate(_ context.Context, key string, _ runtime.Object, _ bool, _ *storage.Preconditions, _ storage.UpdateFunc) error {
	return errReadOnly(storage.OpUpdate, key)
}

// Delete fails: computed objects cannot be written.
func (s *Store) Delete(_ context.Context, key string, _ runtime.Object, _ *storage.Preconditions, _ storage.ValidateObjectFunc) error {
	return errReadOnly(storage.OpDelete, key)
}

// Watch fails: computed objects change without events.
func (s *Store) Watch(_ context.Context, prefix string, _ storage.ListOptions) (watch.Interface, error) {
	return nil, errReadOnly(storage.OpWatch, prefix)
}

// Count is the number of objects computed now.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	objs, err := s.list(ctx)
	if err != nil {
		return 0, fmt.Errorf("compute %s: %w", prefix, err)
	}
	return int64(len(objs)), nil
}

// CurrentRevision is 0: computed objects have no revision.
func (s *Store) CurrentRevision(context.Context) (int64, error) { return 0, nil }

// Ready runs the ready function when there is one.
func (s *Store) Ready(ctx context.Context) error {
	if s.ready == nil {
		return nil
	}
	return s.ready(ctx)
}
