package addresses

import (
	"bytes"
	"context"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/skiff-sh/skiff/internal/netnstest"
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name                   string
		onLink, ours, want     []netip.Addr
		add, remove, oursAfter []netip.Addr
	}{
		{name: "first addresses", onLink: addrs("10.0.0.1"), want: addrs("10.0.0.7", "10.0.0.8"),
			add: addrs("10.0.0.7", "10.0.0.8"), oursAfter: addrs("10.0.0.7", "10.0.0.8")},
		{name: "one moves away", onLink: addrs("10.0.0.1", "10.0.0.7", "10.0.0.8"), ours: addrs("10.0.0.7", "10.0.0.8"), want: addrs("10.0.0.8"),
			remove: addrs("10.0.0.7"), oursAfter: addrs("10.0.0.8")},
		{name: "an operator's address is used, not owned", onLink: addrs("10.0.0.1", "10.0.0.9"), want: addrs("10.0.0.9")},
		{name: "an operator's address is never removed", onLink: addrs("10.0.0.1", "10.0.0.9"), ours: addrs("10.0.0.7"), want: nil},
		{name: "ours but gone from the link (removed by hand)", onLink: addrs("10.0.0.1"), ours: addrs("10.0.0.7"), want: addrs("10.0.0.7"),
			add: addrs("10.0.0.7"), oursAfter: addrs("10.0.0.7")},
		{name: "release", onLink: addrs("10.0.0.1", "10.0.0.7"), ours: addrs("10.0.0.7"), remove: addrs("10.0.0.7")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := plan(c.onLink, c.ours, c.want)
			if !slices.Equal(got.add, c.add) || !slices.Equal(got.remove, c.remove) || !slices.Equal(got.ours, c.oursAfter) {
				t.Errorf("plan = add %v remove %v ours %v, want add %v remove %v ours %v", got.add, got.remove, got.ours, c.add, c.remove, c.oursAfter)
			}
		})
	}
}

func TestGratuitousARP(t *testing.T) {
	f := gratuitousARP([6]byte{2, 0, 0, 0, 0, 1}, [4]byte{10, 0, 0, 7})
	want := []byte{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06, // Ethernet: broadcast, from mac, ARP
		0, 1, 0x08, 0, 6, 4, 0, 2, // Ethernet/IPv4, reply
		2, 0, 0, 0, 0, 1, 10, 0, 0, 7, // sender: mac, ip
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 10, 0, 0, 7, // target: broadcast, ip
	}
	if !bytes.Equal(f, want) {
		t.Errorf("frame\n%x\nwant\n%x", f, want)
	}
}

// TestHolderInANamespace holds addresses on a veth in a namespace of the test's own: they appear
// on the interface with the node's address and a gratuitous ARP reaches the peer; one that moves
// away is removed; an operator's address is used and left alone; a new Holder (a restarted
// node) removes what the last one recorded.
func TestHolderInANamespace(t *testing.T) {
	ns := netnstest.New(t, "skaddr")
	netnstest.MustRun(t, "ip", "-n", ns, "link", "add", "node0", "type", "veth", "peer", "name", "peer0")
	netnstest.MustRun(t, "ip", "-n", ns, "addr", "add", "10.99.0.1/24", "dev", "node0")
	netnstest.MustRun(t, "ip", "-n", ns, "link", "set", "node0", "up")
	netnstest.MustRun(t, "ip", "-n", ns, "link", "set", "peer0", "up")
	onLink := func() string { return netnstest.MustRun(t, "ip", "-n", ns, "-4", "-o", "addr", "show", "dev", "node0") }
	state := filepath.Join(t.TempDir(), "held")
	ctx := context.Background()
	node := netip.MustParseAddr("10.99.0.1")

	var frames [][]byte
	err := netnstest.Run(ns, func() {
		peer, err := netlink.LinkByName("peer0")
		if err != nil {
			t.Error(err)
			return
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ARP)))
		if err != nil {
			t.Error(err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: peer.Attrs().Index}); err != nil {
			t.Error(err)
			return
		}
		h := New(node, state, nil)
		if err := h.Hold(ctx, addrs("10.99.0.7", "10.99.0.8")); err != nil {
			t.Errorf("Hold: %v", err)
		}
		tv := unix.NsecToTimeval((2 * time.Second).Nanoseconds())
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		for range 10 {
			buf := make([]byte, 128)
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				break
			}
			frames = append(frames, buf[:n])
			if len(frames) == 2 {
				break
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := onLink(); !strings.Contains(got, "10.99.0.7/32") || !strings.Contains(got, "10.99.0.8/32") {
		t.Fatalf("held addresses not on node0:\n%s", got)
	}
	announced := map[netip.Addr]bool{}
	for _, f := range frames {
		if len(f) >= 42 && f[21] == 2 {
			announced[netip.AddrFrom4([4]byte(f[28:32]))] = true
		}
	}
	if !announced[netip.MustParseAddr("10.99.0.7")] || !announced[netip.MustParseAddr("10.99.0.8")] {
		t.Errorf("gratuitous ARP for 10.99.0.7 and 10.99.0.8 not seen on the peer (announced %v)", announced)
	}

	netnstest.MustRun(t, "ip", "-n", ns, "addr", "add", "10.99.0.9/32", "dev", "node0")
	err = netnstest.Run(ns, func() {
		if err := New(node, state, nil).Hold(ctx, addrs("10.99.0.8", "10.99.0.9")); err != nil {
			t.Errorf("Hold after a restart: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := onLink(); strings.Contains(got, "10.99.0.7/") || !strings.Contains(got, "10.99.0.8/32") || !strings.Contains(got, "10.99.0.9/32") {
		t.Fatalf("after the restarted holder's Hold(8, 9), want 8 and 9 only:\n%s", got)
	}
	err = netnstest.Run(ns, func() {
		if err := New(node, state, nil).Release(ctx); err != nil {
			t.Errorf("Release: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := onLink(); strings.Contains(got, "10.99.0.8/") || !strings.Contains(got, "10.99.0.9/32") || !strings.Contains(got, "10.99.0.1/24") {
		t.Fatalf("after Release, want the node's and the operator's addresses only:\n%s", got)
	}
}

// TestHolderWithNothingToHold: a node whose advertise address is on none of its interfaces
// (behind NAT, say) is fine while it holds nothing; asked to hold an address, it says why not.
func TestHolderWithNothingToHold(t *testing.T) {
	h := New(netip.MustParseAddr("192.0.2.77"), filepath.Join(t.TempDir(), "held"), nil)
	if err := h.Hold(context.Background(), nil); err != nil {
		t.Fatalf("Hold(nothing): %v", err)
	}
	if err := h.Hold(context.Background(), addrs("192.0.2.78")); err == nil || !strings.Contains(err.Error(), "192.0.2.77") {
		t.Fatalf("Hold without the node's interface: %v, want an error naming its address", err)
	}
}
