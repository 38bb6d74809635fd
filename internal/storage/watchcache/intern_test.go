package watchcache

import (
	"bytes"
	goruntime "runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func fieldSet(s string) []byte {
	// Larger than the runtime's tiny allocations (16 bytes), which may share a slot with others
	// and so outlive their last holder.
	return []byte(`{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":` + s + `}}`)
}

func fieldsOf(b []byte) *metav1.FieldsV1 {
	f := &metav1.FieldsV1{}
	f.SetRawBytes(b)
	return f
}

func TestInternSharesEqualBytes(t *testing.T) {
	in := newFieldsInterner()
	a, b, c := in.intern(fieldSet("one")), in.intern(fieldSet("one")), in.intern(fieldSet("two"))
	if &a[0] != &b[0] {
		t.Error("two equal field sets were not shared")
	}
	if &a[0] == &c[0] || !bytes.Equal(c, fieldSet("two")) {
		t.Error("different field sets were shared")
	}
	if cap(a) != len(a) {
		t.Errorf("interned slice has cap %d > len %d: an append could write into the shared bytes", cap(a), len(a))
	}
	if got := in.len(); got != 2 {
		t.Errorf("interned %d distinct field sets, want 2", got)
	}
	goruntime.KeepAlive(b)
}

func TestInternObjectSharesManagedFields(t *testing.T) {
	in := newFieldsInterner()
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: fieldsOf(fieldSet("spec"))},
			{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1", FieldsV1: fieldsOf(fieldSet("status"))},
			{Manager: "no-fields", Operation: metav1.ManagedFieldsOperationUpdate},
		}}}
	}
	a, b := pod("a"), pod("b")
	in.internObject(a)
	in.internObject(b)
	for i := range 2 {
		ra, rb := a.ManagedFields[i].FieldsV1.GetRawBytes(), b.ManagedFields[i].FieldsV1.GetRawBytes()
		if &ra[0] != &rb[0] {
			t.Errorf("entry %d: pods' field sets not shared", i)
		}
	}
	if !bytes.Equal(a.ManagedFields[1].FieldsV1.GetRawBytes(), fieldSet("status")) || a.ManagedFields[2].FieldsV1 != nil {
		t.Errorf("interning changed the managed fields: %+v", a.ManagedFields)
	}
	// A deep copy (what readers other than in-process informers get) has its own bytes.
	if cp := a.DeepCopy(); &cp.ManagedFields[0].FieldsV1.GetRawBytes()[0] == &a.ManagedFields[0].FieldsV1.GetRawBytes()[0] {
		t.Error("a deep copy shares the interned bytes")
	}
	in.internObject(nil) // no object: nothing to do
}

// An entry goes once the last slice holding its bytes is collected: the table keeps nothing alive.
func TestInternForgetsCollectedBytes(t *testing.T) {
	in := newFieldsInterner()
	held := in.intern(fieldSet("kept"))
	_ = in.intern(fieldSet("dropped"))
	for range 100 { // cleanups run after a collection, on their own goroutine
		goruntime.GC()
		goruntime.Gosched()
		if in.len() == 1 {
			break
		}
	}
	if got := in.len(); got != 1 {
		t.Fatalf("%d interned field sets after the collection, want 1 (the one still held)", got)
	}
	if again := in.intern(fieldSet("kept")); &again[0] != &held[0] {
		t.Error("a field set still held was not shared after the collection")
	}
	goruntime.KeepAlive(held)
}
