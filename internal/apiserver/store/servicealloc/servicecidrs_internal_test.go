package servicealloc

import (
	"net"
	"net/netip"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUsablePrefixes(t *testing.T) {
	now := metav1.Now()
	got := UsablePrefixes([]*networkingv1.ServiceCIDR{
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"203.0.113.0/24", "2001:db8::/64"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.43.0.1/16"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &now}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"198.51.100.0/24"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "twin"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"203.0.113.0/24"}}},
	})
	want := []string{"10.43.0.0/16", "203.0.113.0/24", "2001:db8::/64"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestAssignable(t *testing.T) {
	for _, c := range []struct {
		prefix, ip string
		want       bool
	}{
		{"203.0.113.0/24", "203.0.113.10", true},
		{"203.0.113.0/24", "203.0.113.0", false},
		{"203.0.113.0/24", "203.0.113.255", false},
		{"203.0.113.0/24", "203.0.114.1", false},
		{"10.0.0.0/12", "10.15.255.255", false},
		{"10.0.0.0/12", "10.15.255.254", true},
		{"2001:db8::/64", "2001:db8::ffff:ffff:ffff:ffff", true}, // IPv6 has no broadcast address
		{"2001:db8::/64", "2001:db8::", false},
	} {
		if got := assignable(netip.MustParsePrefix(c.prefix), netip.MustParseAddr(c.ip)); got != c.want {
			t.Errorf("assignable(%s, %s) = %v, want %v", c.prefix, c.ip, got, c.want)
		}
	}
}

func TestPickFree(t *testing.T) {
	p := netip.MustParsePrefix("203.0.113.0/29")
	used := map[netip.Addr]bool{netip.MustParseAddr("203.0.113.2"): true}
	_, own, _ := net.ParseCIDR("203.0.113.4/30") // the own range's addresses are the bitmap's
	got := map[string]bool{}
	for start := range uint64(16) {
		ip, ok := PickFree(p, own, used, start)
		if !ok {
			t.Fatalf("start %d: nothing free", start)
		}
		got[ip.String()] = true
	}
	if len(got) != 2 || !got["203.0.113.1"] || !got["203.0.113.3"] {
		t.Fatalf("picked %v, want only 203.0.113.1 and .3", got)
	}
	used[netip.MustParseAddr("203.0.113.1")], used[netip.MustParseAddr("203.0.113.3")] = true, true
	if ip, ok := PickFree(p, own, used, 0); ok {
		t.Fatalf("picked %s from a full range", ip)
	}
	if ip, ok := PickFree(netip.MustParsePrefix("2001:db8::/120"), nil, nil, 255); !ok || ip.String() != "2001:db8::ff" {
		t.Fatalf("IPv6 pick = %s %v, want 2001:db8::ff", ip, ok)
	}
}
