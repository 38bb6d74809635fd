package ctrlutil

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func sliceAt(name, rv string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
}

func TestSliceWriteSeen(t *testing.T) {
	for _, tt := range []struct {
		name   string
		cached *discoveryv1.EndpointSlice
		write  SliceWrite
		want   bool
	}{
		{"created, not in the cache", nil, SliceWrite{ResourceVersion: "10"}, false},
		{"created, cached at it", sliceAt("a", "10"), SliceWrite{ResourceVersion: "10"}, true},
		{"updated, cached older", sliceAt("a", "9"), SliceWrite{ResourceVersion: "10"}, false},
		{"updated, cached newer (another write since)", sliceAt("a", "12"), SliceWrite{ResourceVersion: "10"}, true},
		{"version unknown, there", sliceAt("a", ""), SliceWrite{}, true},
		{"deleted, still cached", sliceAt("a", "10"), SliceWrite{Deleted: true}, false},
		{"deleted, gone", nil, SliceWrite{Deleted: true}, true},
	} {
		if got := SliceWriteSeen(tt.cached, tt.write); got != tt.want {
			t.Errorf("%s: SliceWriteSeen = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSliceTrackerStale(t *testing.T) {
	tr := NewSliceTracker()
	tr.written("ns/web", "web-1", SliceWrite{ResourceVersion: "10"})
	tr.written("ns/web", "web-old", SliceWrite{Deleted: true})
	if !tr.Stale("ns/web", []*discoveryv1.EndpointSlice{sliceAt("web-old", "3")}) {
		t.Fatal("a cache without the created slice and with the deleted one is not stale")
	}
	// web-1 seen; web-old still there.
	if !tr.Stale("ns/web", []*discoveryv1.EndpointSlice{sliceAt("web-1", "10"), sliceAt("web-old", "3")}) {
		t.Fatal("a cache still holding the deleted slice is not stale")
	}
	// What was seen is forgotten: web-1 may go (another client deleted it) without the cache
	// being stale; web-old's deletion is seen now.
	if tr.Stale("ns/web", nil) {
		t.Fatal("stale once every write was seen")
	}
	if tr.Stale("ns/other", nil) {
		t.Fatal("a source with no writes is stale")
	}
	tr.written("ns/web", "web-2", SliceWrite{ResourceVersion: "20"})
	tr.SliceGone("ns/web", "web-2")
	if tr.Stale("ns/web", nil) {
		t.Fatal("a slice the informer saw deleted still waited for")
	}
}
