package simnode

import (
	"fmt"
	"net/netip"
)

// Every node index owns fixed fake address ranges, so that addresses are unique across the
// simulator without coordination: hosts live in 127.64.0.0/10 and each node's pods in its own
// 10.128.0.0/9 /24. They only need to look like addresses and be unique, but the control plane
// does connect to a node's address on its own (the built-in metrics server scrapes every node's
// kubelet): a host address is therefore a loopback one, so that such a connection stays on this
// machine and is refused there. (Hosts in 100.64.0.0/10 went out by the default route: a 5,000-node
// run sent a scrape to each of them every few seconds.) Nothing connects to pod addresses unless a
// test asks it to.

// hostIP is node index's address.
func hostIP(index int) string {
	h := index + 1 // skip 127.64.0.0
	return fmt.Sprintf("127.%d.%d.%d", 64+(h>>16), (h>>8)&0xff, h&0xff)
}

// podRange is the /24 node index's pods get addresses from.
func podRange(index int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(128 + index>>8), byte(index & 0xff), 0}), 24)
}

// podAddresses hands out the host addresses 1..254 of one node's /24. Addresses are handed out
// round-robin so that an address is not reused right after its pod goes away.
type podAddresses struct {
	prefix netip.Prefix
	used   [4]uint64
	next   uint8
}

func newPodAddresses(index int) podAddresses {
	return podAddresses{prefix: podRange(index), next: 1}
}

// allocate returns a free address, or false when all 254 are taken.
func (a *podAddresses) allocate() (string, bool) {
	for range 254 {
		host := a.next
		a.next++
		if a.next == 255 {
			a.next = 1
		}
		if a.used[host/64]&(1<<(host%64)) == 0 {
			a.used[host/64] |= 1 << (host % 64)
			return a.addr(host), true
		}
	}
	return "", false
}

// claim marks ip as used if it lies in the range (a pod found running after a restart keeps its
// address); it reports whether it did.
func (a *podAddresses) claim(ip string) bool {
	host, ok := a.hostPart(ip)
	if !ok {
		return false
	}
	a.used[host/64] |= 1 << (host % 64)
	return true
}

// release frees ip; addresses outside the range are ignored.
func (a *podAddresses) release(ip string) {
	if host, ok := a.hostPart(ip); ok {
		a.used[host/64] &^= 1 << (host % 64)
	}
}

func (a *podAddresses) hostPart(ip string) (uint8, bool) {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !a.prefix.Contains(addr) {
		return 0, false
	}
	host := addr.As4()[3]
	if host == 0 || host == 255 {
		return 0, false
	}
	return host, true
}

func (a *podAddresses) addr(host uint8) string {
	b := a.prefix.Addr().As4()
	b[3] = host
	return netip.AddrFrom4(b).String()
}
