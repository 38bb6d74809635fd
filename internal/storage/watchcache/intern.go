package watchcache

import (
	"bytes"
	"hash/maphash"
	goruntime "runtime"
	"sync"
	"unsafe"
	"weak"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// fieldsInterner makes the cache's objects share one copy of each distinct managedFields field set
// (FieldsV1.Raw). Objects made from one template (a Deployment's pods, a DaemonSet's) carry
// byte-identical field sets of a few KiB each: in a heap profile of 15,000 such pods they were 15%
// of everything live, a copy per pod. The cache's objects are immutable by contract (they are
// shared with in-process informers uncopied, and copies for other readers are deep copies, which
// copy Raw), so sharing the bytes changes nothing a reader can see.
//
// Entries are weak: a field set stays interned while some object still holds it, and its entry is
// removed when the last one is collected, so the table never keeps memory alive by itself.
type fieldsInterner struct {
	seed maphash.Seed
	mu   sync.Mutex
	// byHash holds, per hash of the bytes, the live distinct byte slices with that hash (weak
	// pointers to their first byte, and their length).
	byHash map[uint64][]internEntry
}

type internEntry struct {
	first weak.Pointer[byte]
	n     int
}

func newFieldsInterner() *fieldsInterner {
	return &fieldsInterner{seed: maphash.MakeSeed(), byHash: map[uint64][]internEntry{}}
}

// internObject replaces the field sets of obj's managedFields with shared copies. obj must not be
// shared yet (the cache calls it on objects fresh from storage, before anyone else sees them).
func (in *fieldsInterner) internObject(obj runtime.Object) {
	if in == nil || obj == nil {
		return
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	// GetManagedFields returns the object's own slice: its entries are updated in place.
	for _, entry := range accessor.GetManagedFields() {
		if raw := entry.FieldsV1.GetRawBytes(); len(raw) > 0 {
			setFieldsBytes(entry.FieldsV1, in.intern(raw))
		}
	}
}

// intern returns a slice with b's contents that is shared with every other live slice interned
// with the same contents (b itself when it is the first).
func (in *fieldsInterner) intern(b []byte) []byte {
	h := maphash.Bytes(in.seed, b)
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, e := range in.byHash[h] {
		if e.n != len(b) {
			continue
		}
		p := e.first.Value()
		if p == nil {
			continue // collected; its cleanup removes the entry
		}
		if shared := unsafe.Slice(p, e.n); bytes.Equal(shared, b) {
			return shared
		}
	}
	// The first holder: keep b (trimmed to its length, so appending to a shared slice can never
	// write into it) and forget it once it is collected.
	b = b[:len(b):len(b)]
	first := weak.Make(&b[0])
	in.byHash[h] = append(in.byHash[h], internEntry{first: first, n: len(b)})
	goruntime.AddCleanup(&b[0], in.forget, internKey{hash: h, first: first})
	return b
}

type internKey struct {
	hash  uint64
	first weak.Pointer[byte]
}

// forget drops the entry of a collected slice.
func (in *fieldsInterner) forget(k internKey) {
	in.mu.Lock()
	defer in.mu.Unlock()
	entries := in.byHash[k.hash]
	for i, e := range entries {
		if e.first == k.first {
			entries = append(entries[:i], entries[i+1:]...)
			break
		}
	}
	if len(entries) == 0 {
		delete(in.byHash, k.hash)
	} else {
		in.byHash[k.hash] = entries
	}
}

// len is the number of distinct live field sets (for tests).
func (in *fieldsInterner) len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, entries := range in.byHash {
		n += len(entries)
	}
	return n
}
