package simnode

import (
	"net/netip"
	"testing"
)

func TestAddressRanges(t *testing.T) {
	tests := []struct {
		index        int
		host, podNet string
	}{
		{index: 0, host: "127.64.0.1", podNet: "10.128.0.0/24"},
		{index: 255, host: "127.64.1.0", podNet: "10.128.255.0/24"},
		{index: 4999, host: "127.64.19.136", podNet: "10.147.135.0/24"},
		{index: MaxNodeIndex - 1, host: "127.64.128.0", podNet: "10.255.255.0/24"},
	}
	for _, tt := range tests {
		if !netip.MustParseAddr(hostIP(tt.index)).IsLoopback() {
			t.Errorf("hostIP(%d) = %s is not a loopback address: connections to it would leave the machine", tt.index, hostIP(tt.index))
		}
		if got := hostIP(tt.index); got != tt.host {
			t.Errorf("hostIP(%d) = %s, want %s", tt.index, got, tt.host)
		}
		if got := podRange(tt.index).String(); got != tt.podNet {
			t.Errorf("podRange(%d) = %s, want %s", tt.index, got, tt.podNet)
		}
	}
}

func TestPodAddressesAllocateClaimRelease(t *testing.T) {
	a := newPodAddresses(7)
	seen := map[string]bool{}
	for range 254 {
		ip, ok := a.allocate()
		if !ok {
			t.Fatalf("ran out after %d addresses", len(seen))
		}
		addr := netip.MustParseAddr(ip)
		if seen[ip] || !podRange(7).Contains(addr) || addr.As4()[3] == 0 || addr.As4()[3] == 255 {
			t.Fatalf("bad or repeated address %s", ip)
		}
		seen[ip] = true
	}
	if ip, ok := a.allocate(); ok {
		t.Fatalf("allocated %s from a full range", ip)
	}
	a.release("10.128.7.42")
	if ip, ok := a.allocate(); !ok || ip != "10.128.7.42" {
		t.Fatalf("after release got %q %v, want 10.128.7.42", ip, ok)
	}
	if a.claim("10.128.8.1") || a.claim("not-an-ip") || a.claim("10.128.7.255") {
		t.Error("claimed an address outside the range")
	}
	fresh := newPodAddresses(7)
	if !fresh.claim("10.128.7.1") {
		t.Fatal("could not claim an address in range")
	}
	if ip, _ := fresh.allocate(); ip != "10.128.7.2" {
		t.Errorf("allocated %s, want the claimed address skipped", ip)
	}
}
