package proxy

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/netnstest"
)

// inNetns runs f on an OS thread inside the named network namespace (netnstest.Run), failing tb
// when it cannot enter it.
func inNetns(tb testing.TB, name string, f func()) {
	tb.Helper()
	if err := netnstest.Run(name, f); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkConnect is the cost of a TCP connection (connect and close) from the node to a
// listener in a second namespace: straight to the pod IP, and through a cluster IP whose rules are
// the first of 1 or the last of 1,000 Services; and straight to the pod IP again with those 1,000
// Services' rules in place; in each mode.
func BenchmarkConnect(b *testing.B) {
	ns, host := testNetns(b)
	epNS, epIP := endpointNetns(b, ns)
	// A Go listener in the endpoint's namespace that accepts and closes: the figure is the
	// path's cost, not a server's.
	var l net.Listener
	inNetns(b, epNS, func() {
		var err error
		l, err = net.Listen("tcp", epIP+":8080")
		if err != nil {
			b.Error(err)
		}
	})
	if l == nil {
		b.FailNow()
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	cfg := benchConfig()
	ctx := context.Background()
	if err := host.EnsureDevice(ctx, "skp0", cfg.ServiceCIDR.String(), 100); err != nil {
		b.Fatal(err)
	}
	// program replaces whatever the previous sub-benchmark wrote with mode's rules for the
	// first n services, the last of which leads to the listener, and returns its address.
	program := func(mode string, n int) string {
		if err := host.CleanupAll(ctx, cfg.Prefix); err != nil {
			b.Fatal(err)
		}
		svcs, slices := benchCluster()
		svcs, slices = svcs[:n], slices[:n]
		last := n - 1
		slices[last] = makeSlice(fmt.Sprintf("svc-%d", last), "http", 8080, tcp, readyEp(epIP, "node-a"))
		be := benchBackend(b, mode, host, cfg)
		if _, _, err := be.apply(ctx, nil, svcs, slices); err != nil {
			b.Fatal(err)
		}
		return svcs[last].Spec.ClusterIP + ":80"
	}
	dial := func(b *testing.B, addr string) {
		inNetns(b, ns, func() {
			d := net.Dialer{Timeout: 5 * time.Second}
			for b.Loop() {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					b.Error(err)
					return
				}
				c.Close()
			}
		})
	}
	b.Run("pod-ip", func(b *testing.B) { dial(b, epIP+":8080") })
	for _, mode := range modes {
		if mode == ModeNftables {
			requireNft(b)
		}
		vip1 := program(mode, 1)
		b.Run(mode+"/cluster-ip-1-service", func(b *testing.B) { dial(b, vip1) })
		vip1000 := program(mode, 1000)
		b.Run(mode+"/cluster-ip-last-of-1000", func(b *testing.B) { dial(b, vip1000) })
		// Every new connection leaving the node walks the services dispatch, not only those to
		// services (iptables: the SERVICES chain, linearly; nftables: one map lookup).
		b.Run(mode+"/pod-ip-with-1000-services", func(b *testing.B) { dial(b, epIP+":8080") })
	}
	if err := host.CleanupAll(ctx, cfg.Prefix); err != nil {
		b.Error(err)
	}
}
