package cni

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func testRanges(t *testing.T, subnets ...string) []Range {
	t.Helper()
	var out []Range
	for _, s := range subnets {
		p := netip.MustParsePrefix(s)
		out = append(out, Range{Subnet: p, Gateway: p.Addr().Next()})
	}
	return out
}

func TestLeasesSurviveAndRelease(t *testing.T) {
	dir := t.TempDir()
	ranges := testRanges(t, "10.250.7.0/29", "fd00:7::/120")
	s, err := newLeaseStore(dir, "net")
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.acquire(ranges, holder("c1", "eth0"))
	if err != nil {
		t.Fatal(err)
	}
	if a[0] != netip.MustParseAddr("10.250.7.2") || a[1] != netip.MustParseAddr("fd00:7::2") {
		t.Fatalf("first leases %v", a)
	}
	// ADD retried for the same container: the same addresses.
	again, err := s.acquire(ranges, holder("c1", "eth0"))
	if err != nil || again[0] != a[0] || again[1] != a[1] {
		t.Fatalf("repeated acquire %v, %v; want %v", again, err, a)
	}
	// A restart: a new store on the same directory sees the lease and goes on after it.
	s2, _ := newLeaseStore(dir, "net")
	b, err := s2.acquire(ranges, holder("c2", "eth0"))
	if err != nil || b[0] != netip.MustParseAddr("10.250.7.3") {
		t.Fatalf("lease after restart %v, %v", b, err)
	}
	got, ok, err := s2.lookup(ranges, holder("c1", "eth0"))
	if err != nil || !ok || got[0] != a[0] {
		t.Fatalf("lookup %v %v %v", got, ok, err)
	}
	// DEL releases, twice is fine, and another network's leases are apart.
	for range 2 {
		if err := s2.release(holder("c1", "eth0")); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := s2.lookup(ranges, holder("c1", "eth0")); ok {
		t.Error("lease still held after release")
	}
	if _, err := os.Stat(filepath.Join(dir, "net", "10.250.7.3")); err != nil {
		t.Errorf("c2's lease: %v", err)
	}
	// A released address is not handed out again at once: the next lease goes on after the last.
	c, _ := s2.acquire(ranges, holder("c3", "eth0"))
	if c[0] != netip.MustParseAddr("10.250.7.4") {
		t.Errorf("next lease %s, want 10.250.7.4", c[0])
	}
}

func TestLeasesFullRange(t *testing.T) {
	s, _ := newLeaseStore(t.TempDir(), "net")
	ranges := testRanges(t, "10.250.8.0/30") // one address for pods: .2
	if _, err := s.acquire(ranges, holder("c1", "eth0")); err != nil {
		t.Fatal(err)
	}
	_, err := s.acquire(ranges, holder("c2", "eth0"))
	if e, ok := err.(*Error); !ok || e.Code != codeTryAgainLater {
		t.Fatalf("acquire in a full range: %v, want code %d", err, codeTryAgainLater)
	}
}

// TestLeasesConcurrent runs allocations the way containerd runs plugins, many at once, each with a
// store of its own (a process of its own): no address may go to two containers.
func TestLeasesConcurrent(t *testing.T) {
	dir := t.TempDir()
	ranges := testRanges(t, "10.250.9.0/24")
	const n = 60
	got := make([]netip.Addr, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := newLeaseStore(dir, "net")
			if err != nil {
				errs[i] = err
				return
			}
			a, err := s.acquire(ranges, holder(fmt.Sprintf("c%d", i), "eth0"))
			if err == nil {
				got[i] = a[0]
			}
			errs[i] = err
		})
	}
	wg.Wait()
	seen := map[netip.Addr]int{}
	for i, a := range got {
		if errs[i] != nil {
			t.Fatalf("container %d: %v", i, errs[i])
		}
		if j, dup := seen[a]; dup {
			t.Fatalf("%s leased to containers %d and %d", a, j, i)
		}
		seen[a] = i
	}
}
