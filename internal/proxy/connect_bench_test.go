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
// Services' rules in place.
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
	for _, h := range cfg.Hooks() {
		if h.Table == "nat" {
			// The chains must exist before their hooks.
			input, _ := Plan(nil, Build(cfg, nil, nil))
			if err := host.Restore(ctx, input); err != nil {
				b.Fatal(err)
			}
			break
		}
	}
	for _, h := range cfg.Hooks() {
		if _, err := host.EnsureHook(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
	program := func(n int) string {
		svcs, slices := benchCluster()
		svcs, slices = svcs[:n], slices[:n]
		last := n - 1
		slices[last] = makeSlice(fmt.Sprintf("svc-%d", last), "http", 8080, tcp, readyEp(epIP, "node-a"))
		input, _ := Plan(unknown(&Ruleset{NAT: map[string][]string{}, Filter: map[string][]string{}}), Build(cfg, svcs, slices))
		// Replace whatever the previous sub-benchmark wrote.
		if err := host.Cleanup(ctx, cfg.Prefix); err != nil {
			b.Fatal(err)
		}
		if err := host.Restore(ctx, input); err != nil {
			b.Fatal(err)
		}
		for _, h := range cfg.Hooks() {
			if _, err := host.EnsureHook(ctx, h); err != nil {
				b.Fatal(err)
			}
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
	vip1 := program(1)
	b.Run("cluster-ip-1-service", func(b *testing.B) { dial(b, vip1) })
	vip1000 := program(1000)
	b.Run("cluster-ip-last-of-1000", func(b *testing.B) { dial(b, vip1000) })
	// Every new connection leaving the node walks the SERVICES chain, not only those to services.
	b.Run("pod-ip-with-1000-services", func(b *testing.B) { dial(b, epIP+":8080") })
}
