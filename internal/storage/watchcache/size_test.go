package watchcache

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestObjectSizeFollowsContent(t *testing.T) {
	small := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}
	large := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": strings.Repeat("x", 100<<10)}}
	if s, l := objectSize(small), objectSize(large); s >= 1024 || l < 100<<10 {
		t.Fatalf("sizes: small %d, large %d", s, l)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"blob": strings.Repeat("y", 50<<10), "n": int64(3)}}}
	if n := objectSize(cr); n < 50<<10 || n > 51<<10 {
		t.Fatalf("unstructured size %d, want about 50 KiB", n)
	}
}

func TestHistoryBoundedByBytes(t *testing.T) {
	type step struct {
		size        int64
		wantEvicted int64 // revision of the newest evicted event, 0 for none
		wantN       int
	}
	for _, tc := range []struct {
		name     string
		capacity int
		maxBytes int64
		steps    []step
	}{
		{"count only", 2, 0, []step{{100, 0, 1}, {100, 0, 2}, {100, 1, 2}}},
		{"bytes evict several", 10, 250, []step{{100, 0, 1}, {100, 0, 2}, {200, 2, 1}, {10, 0, 2}}},
		{"an event over the bound alone is kept", 10, 50, []step{{100, 0, 1}, {100, 1, 1}}},
		{"both bounds", 3, 1000, []step{{10, 0, 1}, {10, 0, 2}, {10, 0, 3}, {10, 1, 3}, {990, 3, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := history{buf: make([]*event, tc.capacity), maxBytes: tc.maxBytes}
			var total int64
			for i, st := range tc.steps {
				rev := int64(i + 1)
				evicted := h.push(&event{rev: rev, size: st.size})
				got := int64(0)
				if evicted != nil {
					got = evicted.rev
				}
				if got != st.wantEvicted || h.n != st.wantN {
					t.Fatalf("step %d: evicted rev %d, %d kept; want %d, %d", i, got, h.n, st.wantEvicted, st.wantN)
				}
				total = 0
				for j := range h.n {
					total += h.at(j).size
				}
				if total != h.bytes {
					t.Fatalf("step %d: bytes %d, events hold %d", i, h.bytes, total)
				}
				if last := h.at(h.n - 1); last.rev != rev {
					t.Fatalf("step %d: the newest event is not kept", i)
				}
			}
		})
	}
}
