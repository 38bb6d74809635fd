package watchcache

import (
	"bytes"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/storage"
)

// encodedBudget bounds the memoized encodings of one resource cache.
type encodedBudget struct {
	used atomic.Int64
	max  int64
}

func (b *encodedBudget) reserve(n int64) bool {
	if b == nil || b.max <= 0 {
		return false
	}
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *encodedBudget) release(n int64) {
	if b != nil && n != 0 {
		b.used.Add(-n)
	}
}

// sharedObject is one object version the cache holds, with its encodings memoized per wire form:
// every list response that sends this version reuses the bytes. The memo is dropped (and its bytes
// given back to the budget) when the version leaves the cache's state.
type sharedObject struct {
	obj    runtime.Object
	budget *encodedBudget // nil: never memoized (an older version rebuilt for one list)

	mu      sync.Mutex
	enc     map[string][]byte
	bytes   int64
	dropped bool
}

var _ storage.SharedObject = (*sharedObject)(nil)

func (s *sharedObject) Object() runtime.Object { return s.obj }

// Encoded implements storage.SharedObject.
func (s *sharedObject) Encoded(id string, encode func(runtime.Object, io.Writer) error) ([]byte, error) {
	s.mu.Lock()
	data, ok := s.enc[id]
	s.mu.Unlock()
	if ok {
		return data, nil
	}
	var buf bytes.Buffer
	if err := encode(s.obj, &buf); err != nil {
		return nil, err
	}
	data = buf.Bytes()
	s.mu.Lock()
	defer s.mu.Unlock()
	if prior, ok := s.enc[id]; ok {
		return prior, nil
	}
	if s.dropped || s.budget == nil {
		return data, nil
	}
	// Keep no more than the bytes: a buffer's spare capacity would be held uncounted.
	if cap(data) > len(data)+len(data)/8 {
		data = bytes.Clone(data)
	}
	if !s.budget.reserve(int64(len(data))) {
		return data, nil
	}
	if s.enc == nil {
		s.enc = make(map[string][]byte, 2)
	}
	s.enc[id] = data
	s.bytes += int64(len(data))
	return data, nil
}

// drop forgets the encodings; responses still writing them keep their slices.
func (s *sharedObject) drop() {
	s.mu.Lock()
	n := s.bytes
	s.enc, s.bytes, s.dropped = nil, 0, true
	s.mu.Unlock()
	s.budget.release(n)
}

// listState is what serving lists from memory keeps beside a resource cache's state; guarded by the
// resource cache's mutex.
type listState struct {
	// sortedKeys are the state's keys in order; nil once a key was added or removed.
	sortedKeys []string
	// shared are the current objects' memos, made as lists send them.
	shared map[string]*sharedObject
	budget *encodedBudget
	// lastChange is the revision of the newest change applied (the initial list's at first): the
	// state is the state at any revision from it to the cache's revision.
	lastChange int64
	// revChanged is closed when the cache's revision advances (or the cache fails).
	revChanged chan struct{}
}

func newListState(maxEncoded int64) listState {
	return listState{shared: map[string]*sharedObject{}, budget: &encodedBudget{max: maxEncoded}}
}

// changedLocked records a change of key at rev; structural is true when the key was added or removed.
func (l *listState) changedLocked(key string, rev int64, structural bool) {
	if structural {
		l.sortedKeys = nil
	}
	if s, ok := l.shared[key]; ok {
		s.drop()
		delete(l.shared, key)
	}
	l.lastChange = max(l.lastChange, rev)
}

func (l *listState) sortedKeysLocked(state map[string]runtime.Object) []string {
	if l.sortedKeys == nil {
		l.sortedKeys = make([]string, 0, len(state))
		for key := range state {
			l.sortedKeys = append(l.sortedKeys, key)
		}
		slices.Sort(l.sortedKeys)
	}
	return l.sortedKeys
}

// sharedLocked is the memo of obj at key; current says obj is the state's object (an older version
// gets a memo of its own that is not kept).
func (l *listState) sharedLocked(key string, obj runtime.Object, current bool) *sharedObject {
	if !current {
		return &sharedObject{obj: obj}
	}
	if s, ok := l.shared[key]; ok && s.obj == obj {
		return s
	}
	s := &sharedObject{obj: obj, budget: l.budget}
	l.shared[key] = s
	return s
}

func (l *listState) dropAllLocked() {
	for key, s := range l.shared {
		s.drop()
		delete(l.shared, key)
	}
	l.sortedKeys = nil
}

func (l *listState) waitChLocked() <-chan struct{} {
	if l.revChanged == nil {
		l.revChanged = make(chan struct{})
	}
	return l.revChanged
}

func (l *listState) wakeLocked() {
	if l.revChanged != nil {
		close(l.revChanged)
		l.revChanged = nil
	}
}

// advanceLocked moves the cache's revision to rev (never back) and wakes lists waiting for it.
func (rc *resourceCache) advanceLocked(rev int64) {
	if rev > rc.rev {
		rc.rev = rev
		rc.lists.wakeLocked()
	}
}
