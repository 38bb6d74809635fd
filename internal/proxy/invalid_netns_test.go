package proxy

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/netnstest"
)

// TestInvalidConntrackDroppedInNetns: the node's namespace routes between a client and a server
// namespace; the client sends the server a lone RST (conntrack calls it INVALID: no connection
// starts with a RST) and then a SYN as a marker. With the proxier running, the server sees the
// SYN but not the RST; with nf_conntrack_tcp_be_liberal set in the node's namespace, the proxier
// installs no drop and the RST goes through. In both modes (upstream's "[sig-network] Conntrack
// should drop INVALID conntrack entries").
func TestInvalidConntrackDroppedInNetns(t *testing.T) {
	for _, mode := range modes {
		for _, liberal := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/liberal=%v", mode, liberal), func(t *testing.T) { testInvalidConntrack(t, mode, liberal) })
		}
	}
}

func testInvalidConntrack(t *testing.T, mode string, liberal bool) {
	ns, host := testNetns(t)
	if mode == ModeNftables {
		requireNft(t)
	}
	netnstest.MustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	sub := rand.IntN(250) + 1
	client := routedPeer(t, ns, "c", fmt.Sprintf("10.251.%d", sub))
	server := routedPeer(t, ns, "s", fmt.Sprintf("10.252.%d", sub))

	cfg := Config{Prefix: NodePrefix(t.Name()), NodeName: "node-a",
		ClusterCIDR: netipPrefix("10.250.0.0/16"), ServiceCIDR: netipPrefix("10.96.9.0/24")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The proxier reads the sysctl at start, in the node's namespace (conntrack is loaded on the
	// host, so the namespace has it).
	if liberal {
		netnstest.MustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.netfilter.nf_conntrack_tcp_be_liberal=1")
	}
	go func() {
		done <- Run(ctx, fake.NewClientset(), Options{Config: cfg, Mode: mode, Device: "skp2", Host: host, MinSyncInterval: 20 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the forward rules", func() (bool, string) {
		s := nodeRules(t, host, cfg.Prefix)
		// iptables: the hook, inserted after the chains; nftables: the base chain, with its rules.
		return strings.Contains(s, "-A FORWARD -j "+cfg.Prefix+"-FORWARD") || strings.Contains(s, "chain filter-forward"), s
	})

	// The server's view: every TCP segment that reaches it, IP header included.
	var rx int
	inNetns(t, server.ns, func() {
		var err error
		if rx, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_TCP); err != nil {
			t.Error(err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	defer unix.Close(rx)
	if err := unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1}); err != nil {
		t.Fatal(err)
	}

	const rstPort, markerPort = 40000, 40001
	inNetns(t, client.ns, func() {
		tx, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_TCP)
		if err != nil {
			t.Error(err)
			return
		}
		defer unix.Close(tx)
		to := &unix.SockaddrInet4{Addr: server.addr.As4()}
		for _, seg := range [][]byte{
			tcpSegment(client.addr, server.addr, rstPort, 9, tcpRST|tcpACK),
			tcpSegment(client.addr, server.addr, markerPort, 9, tcpSYN),
		} {
			if err := unix.Sendto(tx, seg, 0, to); err != nil {
				t.Error(err)
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// Segments on one path arrive in order: once the marker is in, the RST went through or was
	// dropped. Liberal mode waits for the RST too (it may only come later if it came at all).
	sawRST, sawMarker := false, false
	buf := make([]byte, 2048)
	deadline := time.Now().Add(20 * time.Second)
	for !sawMarker || (liberal && !sawRST) {
		if time.Now().After(deadline) {
			t.Fatalf("server saw marker=%v RST=%v before the deadline", sawMarker, sawRST)
		}
		n, _, err := unix.Recvfrom(rx, buf, 0)
		if err != nil {
			continue // the receive timeout: look at the deadline again
		}
		src, sport, flags, ok := parseTCP(buf[:n])
		if !ok || src != client.addr {
			continue
		}
		switch {
		case sport == rstPort && flags&tcpRST != 0:
			sawRST = true
		case sport == markerPort && flags&tcpSYN != 0:
			sawMarker = true
		}
	}
	if sawRST == !liberal {
		t.Errorf("the INVALID RST reached the server: %v, want %v (nf_conntrack_tcp_be_liberal=%v)\n%s", sawRST, liberal, liberal, nodeRules(t, host, cfg.Prefix))
	}
}

// peer is a namespace routed through the node's.
type peer struct {
	ns   string
	addr netip.Addr
}

// routedPeer is a namespace of the test's own joined to ns by a veth pair on net.0/24 (ns has
// .1, the peer .2 and a default route through ns).
func routedPeer(tb testing.TB, ns, suffix, net string) peer {
	tb.Helper()
	name := ns + suffix
	netnstest.MustRun(tb, "ip", "netns", "add", name)
	tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	nodeSide := "v" + suffix + "0"
	netnstest.MustRun(tb, "ip", "-n", ns, "link", "add", nodeSide, "type", "veth", "peer", "name", "eth0", "netns", name)
	netnstest.MustRun(tb, "ip", "-n", ns, "addr", "add", net+".1/24", "dev", nodeSide)
	netnstest.MustRun(tb, "ip", "-n", ns, "link", "set", nodeSide, "up")
	netnstest.MustRun(tb, "ip", "-n", name, "addr", "add", net+".2/24", "dev", "eth0")
	netnstest.MustRun(tb, "ip", "-n", name, "link", "set", "eth0", "up")
	netnstest.MustRun(tb, "ip", "-n", name, "link", "set", "lo", "up")
	netnstest.MustRun(tb, "ip", "-n", name, "route", "add", "default", "via", net+".1")
	return peer{ns: name, addr: netip.MustParseAddr(net + ".2")}
}

const (
	tcpRST = 0x04
	tcpSYN = 0x02
	tcpACK = 0x10
)

// tcpSegment is a 20-byte TCP header (no payload) with its checksum, for a raw socket that lets
// the kernel write the IP header.
func tcpSegment(src, dst netip.Addr, sport, dport uint16, flags byte) []byte {
	seg := make([]byte, 20)
	binary.BigEndian.PutUint16(seg[0:], sport)
	binary.BigEndian.PutUint16(seg[2:], dport)
	binary.BigEndian.PutUint32(seg[4:], 1000)
	if flags&tcpACK != 0 {
		binary.BigEndian.PutUint32(seg[8:], 2000)
	}
	seg[12] = 5 << 4 // data offset: 5 words
	seg[13] = flags
	binary.BigEndian.PutUint16(seg[14:], 64240)
	s, d := src.As4(), dst.As4()
	pseudo := append(append(append(s[:], d[:]...), 0, unix.IPPROTO_TCP, 0, byte(len(seg))), seg...)
	binary.BigEndian.PutUint16(seg[16:], checksum(pseudo))
	return seg
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// parseTCP reads an IPv4 packet as a raw TCP socket receives it: source address, source port
// and flags.
func parseTCP(pkt []byte) (netip.Addr, uint16, byte, bool) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return netip.Addr{}, 0, 0, false
	}
	ihl := int(pkt[0]&0x0f) * 4
	if len(pkt) < ihl+14 {
		return netip.Addr{}, 0, 0, false
	}
	src := netip.AddrFrom4([4]byte(pkt[12:16]))
	return src, binary.BigEndian.Uint16(pkt[ihl:]), pkt[ihl+13], true
}
