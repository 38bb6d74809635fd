package watchcache_test

import (
	"context"
	"errors"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/internal/storage"
)

// fakeStore is a storage.Interface whose lists come from a fixed state and whose watches are fake
// watchers the test drives, so dispatching can be tested event by event.
type fakeStore struct {
	mu       sync.Mutex
	objects  []runtime.Object
	revision int64
	watches  []fakeWatchCall
}

type fakeWatchCall struct {
	prefix  string
	opts    storage.ListOptions
	watcher *watch.FakeWatcher
}

var _ storage.Interface = (*fakeStore)(nil)

var errNotFaked = errors.New("not part of the fake")

func (s *fakeStore) Create(context.Context, string, runtime.Object, runtime.Object) error {
	return errNotFaked
}
func (s *fakeStore) Get(context.Context, string, storage.GetOptions, runtime.Object) error {
	return errNotFaked
}
func (s *fakeStore) GuaranteedUpdate(context.Context, string, runtime.Object, bool, *storage.Preconditions, storage.UpdateFunc) error {
	return errNotFaked
}
func (s *fakeStore) Delete(context.Context, string, runtime.Object, *storage.Preconditions, storage.ValidateObjectFunc) error {
	return errNotFaked
}
func (s *fakeStore) Count(context.Context, string) (int64, error) { return 0, errNotFaked }
func (s *fakeStore) Ready(context.Context) error                  { return nil }

func (s *fakeStore) CurrentRevision(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revision, nil
}

// List returns the whole state at the fake's revision, whatever the options.
func (s *fakeStore) List(_ context.Context, _ string, _ storage.ListOptions, listObj runtime.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := meta.SetList(listObj, s.objects); err != nil {
		return err
	}
	listAccessor, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	listAccessor.SetResourceVersion(strconv.FormatInt(s.revision, 10))
	return nil
}

func (s *fakeStore) Watch(_ context.Context, prefix string, opts storage.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := watch.NewFake()
	s.watches = append(s.watches, fakeWatchCall{prefix: prefix, opts: opts, watcher: w})
	return w, nil
}

func (s *fakeStore) calls() []fakeWatchCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]fakeWatchCall(nil), s.watches...)
}

// underlying is the cache's own watch (the first one opened).
func (s *fakeStore) underlying() *watch.FakeWatcher { return s.calls()[0].watcher }

func bookmarkAt(rev int64) *corev1.Pod { return makePod("").rv(rev).obj() }
