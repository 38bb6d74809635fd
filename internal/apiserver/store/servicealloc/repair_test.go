package servicealloc_test

import (
	"context"
	"net"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/apiserver/store/servicealloc"
)

func TestPlanRepair(t *testing.T) {
	set := map[int]bool{1: true, 2: true, 5: true}
	held := map[int]bool{1: true, 3: true}
	p := servicealloc.PlanRepair(set, held, map[int]int{2: 2, 7: 2})
	if !slices.Equal(p.Set, []int{3}) {
		t.Errorf("Set %v, want [3] (held, lost from the bitmap)", p.Set)
	}
	if !slices.Equal(p.Release, []int{2}) {
		t.Errorf("Release %v, want [2] (its third pass unheld)", p.Release)
	}
	if len(p.Leaks) != 1 || p.Leaks[5] != 1 {
		t.Errorf("Leaks %v, want 5 seen once (7 is no longer set: forgotten)", p.Leaks)
	}
}

// TestRepairThroughTheStore: a Service removed from storage without its allocation given back (a
// stop between the two) leaves its cluster IP and node port set; the repair gives them back on its
// third pass, not before (an allocation whose Service is being written looks the same for a
// moment). A bitmap that lost what a Service holds gets it back on the first pass.
func TestRepairThroughTheStore(t *testing.T) {
	st, ranges, scheme := servicesStore(t)
	alloc := servicealloc.New(mustCIDR(t, "10.43.0.0/24"), ranges)
	ctx := context.Background()
	kept, gone := createNodePort(t, st, scheme, "kept"), createNodePort(t, st, scheme, "gone")
	const ips, ports = "/registry/ranges/serviceips", "/registry/ranges/servicenodeports"
	if err := st.Storage().Delete(ctx, st.Key("default", "gone"), &corev1.Service{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	r := alloc.NewRepairer()
	pass := func() (int, int) {
		t.Helper()
		released, set, err := r.Pass(ctx, []*corev1.Service{kept})
		if err != nil {
			t.Fatal(err)
		}
		return released, set
	}
	for i := 1; i < servicealloc.RepairPasses; i++ {
		if released, _ := pass(); released != 0 || held(t, ranges, ips) != 2 || held(t, ranges, ports) != 2 {
			t.Fatalf("pass %d released %d (IPs %d, ports %d held), want nothing yet", i, released, held(t, ranges, ips), held(t, ranges, ports))
		}
	}
	if released, _ := pass(); released != 2 || held(t, ranges, ips) != 1 || held(t, ranges, ports) != 1 {
		t.Fatalf("third pass released %d (IPs %d, ports %d held), want gone's IP and port back", released, held(t, ranges, ips), held(t, ranges, ports))
	}
	// gone's address is free again: a new Service may ask for it.
	again := service("again", corev1.ServiceTypeClusterIP)
	again.Spec.ClusterIP = gone.Spec.ClusterIP
	scheme.Default(again)
	if _, err := st.Create(ctx, again, store.CreateOptions{}); err != nil {
		t.Fatalf("the repaired address: %v", err)
	}
	if err := ranges.Delete(ctx, ips, &corev1.RangeAllocation{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, set := pass(); set != 1 || held(t, ranges, ips) != 1 {
		t.Fatalf("a lost bitmap: %d set, %d held, want kept's IP back", set, held(t, ranges, ips))
	}
}

// createNodePort stores a NodePort Service named name through st (defaulted as a handler would)
// and returns it as stored.
func createNodePort(t *testing.T, st *store.Store, scheme *runtime.Scheme, name string) *corev1.Service {
	t.Helper()
	svc := service(name, corev1.ServiceTypeNodePort)
	scheme.Default(svc)
	out, err := st.Create(context.Background(), svc, store.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out.(*corev1.Service)
}

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, cidr, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return cidr
}
