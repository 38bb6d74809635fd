package store

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
)

// memStorage is an in-memory storage.Interface for the store's unit tests: enough of etcd's
// semantics (revisions as resourceVersions, compare-and-swap, preconditions) to drive the store.
type memStorage struct {
	mu      sync.Mutex
	rev     int64
	objects map[string]runtime.Object
	// raceUpdates makes that many GuaranteedUpdate writes lose their compare-and-swap once, as if
	// another writer got there first, so tryUpdate runs again.
	raceUpdates int
	// failWrites makes every Create, GuaranteedUpdate write and Delete fail with this error.
	failWrites error
	writes     int
}

var _ storage.Interface = &memStorage{}

func newMemStorage() *memStorage { return &memStorage{objects: map[string]runtime.Object{}} }

func (m *memStorage) put(key string, obj runtime.Object) runtime.Object {
	m.rev++
	stored := obj.DeepCopyObject()
	acc, _ := meta.Accessor(stored)
	acc.SetResourceVersion(strconv.FormatInt(m.rev, 10))
	m.objects[key] = stored
	m.writes++
	return stored
}

// copyInto sets *dst to a copy of *src; both are pointers to the same struct type.
func copyInto(src, dst runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
}

func (m *memStorage) Create(_ context.Context, key string, obj, out runtime.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWrites != nil {
		return m.failWrites
	}
	if _, ok := m.objects[key]; ok {
		return storage.NewError(storage.ErrCodeExists, key, "", nil)
	}
	copyInto(m.put(key, obj), out)
	return nil
}

func (m *memStorage) Get(_ context.Context, key string, _ storage.GetOptions, out runtime.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	obj, ok := m.objects[key]
	if !ok {
		return storage.NewError(storage.ErrCodeNotFound, key, "", nil)
	}
	copyInto(obj, out)
	return nil
}

func (m *memStorage) List(_ context.Context, prefix string, opts storage.ListOptions, listObj runtime.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var items []runtime.Object
	for key, obj := range m.objects {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		if ok, err := opts.Predicate.Matches(obj); err != nil || !ok {
			continue
		}
		items = append(items, obj.DeepCopyObject())
	}
	return meta.SetList(listObj, items)
}

func (m *memStorage) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	_ *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	for {
		m.mu.Lock()
		current, ok := m.objects[key]
		m.mu.Unlock()
		var in runtime.Object
		switch {
		case ok:
			in = current.DeepCopyObject()
		case ignoreNotFound:
			in = dest.DeepCopyObject()
		default:
			return storage.NewError(storage.ErrCodeNotFound, key, "", nil)
		}
		next, err := tryUpdate(in)
		if err != nil {
			return err
		}
		m.mu.Lock()
		if m.raceUpdates > 0 {
			m.raceUpdates--
			m.mu.Unlock()
			continue
		}
		if m.failWrites != nil {
			m.mu.Unlock()
			return m.failWrites
		}
		stored := m.put(key, next)
		if dest != nil {
			copyInto(stored, dest)
		}
		m.mu.Unlock()
		return nil
	}
}

func (m *memStorage) Delete(_ context.Context, key string, out runtime.Object, p *storage.Preconditions, _ storage.ValidateObjectFunc) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWrites != nil {
		return m.failWrites
	}
	obj, ok := m.objects[key]
	if !ok {
		return storage.NewError(storage.ErrCodeNotFound, key, "", nil)
	}
	acc, _ := meta.Accessor(obj)
	if p != nil && p.ResourceVersion != nil && *p.ResourceVersion != acc.GetResourceVersion() {
		return storage.NewError(storage.ErrCodeConflict, key, "", nil)
	}
	delete(m.objects, key)
	m.writes++
	copyInto(obj, out)
	return nil
}

func (m *memStorage) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	return nil, errors.New("memStorage does not watch")
}

func (m *memStorage) Count(_ context.Context, prefix string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for key := range m.objects {
		if strings.HasPrefix(key, prefix) {
			n++
		}
	}
	return n, nil
}

func (m *memStorage) CurrentRevision(context.Context) (int64, error) { return m.rev, nil }
func (m *memStorage) Ready(context.Context) error                    { return nil }
