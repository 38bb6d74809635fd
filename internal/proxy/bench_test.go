package proxy

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// benchCluster is 1,000 Services with 10 ready endpoints each (10,000 endpoints).
func benchCluster() ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	var svcs []*corev1.Service
	var slices []*discoveryv1.EndpointSlice
	for i := range 1000 {
		name := fmt.Sprintf("svc-%d", i)
		svcs = append(svcs, makeSvc(name, fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)).port("http", 80, tcp).obj())
		var eps []ep
		for j := range 10 {
			eps = append(eps, readyEp(fmt.Sprintf("10.244.%d.%d", i/25, (i%25)*10+j+1), "node-a"))
		}
		slices = append(slices, makeSlice(name, "http", 8080, tcp, eps...))
	}
	return svcs, slices
}

func benchConfig() Config {
	cfg := testConfig()
	cfg.ServiceCIDR = netipPrefix("10.96.0.0/16")
	return cfg
}

// BenchmarkBuild is the pure part of one sync of 1,000 Services and 10,000 endpoints.
func BenchmarkBuild(b *testing.B) {
	svcs, slices := benchCluster()
	cfg := benchConfig()
	for b.Loop() {
		Build(cfg, svcs, slices)
	}
}

// BenchmarkBuildNft is BenchmarkBuild for the nftables backend.
func BenchmarkBuildNft(b *testing.B) {
	svcs, slices := benchCluster()
	cfg := benchConfig()
	for b.Loop() {
		BuildNft(cfg, svcs, slices)
	}
}

// benchBackend is a backend of mode on host, set up (base rules and hooks installed).
func benchBackend(b *testing.B, mode string, host Host, cfg Config) backend {
	b.Helper()
	be, err := newBackend(Options{Config: cfg, Mode: mode, Host: host})
	if err != nil {
		b.Fatal(err)
	}
	if err := be.setup(context.Background()); err != nil {
		b.Fatal(err)
	}
	return be
}

// forget makes be's next apply rewrite everything, as a proxy without a diff would.
func forget(be backend) {
	switch be := be.(type) {
	case *iptablesBackend:
		be.prev = unknown(be.prev)
	case *nftBackend:
		be.prev = nil
	}
}

// BenchmarkServiceChange programs one Service's endpoint change on a node (its own network
// namespace) that already has 1,000 Services and 10,000 endpoints, in each mode: Build, Plan and
// iptables-restore, or BuildNft, PlanNft and nft -f. "incremental" rewrites what changed only
// (what the proxier does); "full" rewrites everything (iptables: every chain; nftables: the whole
// table, replaced in one transaction).
func BenchmarkServiceChange(b *testing.B) {
	for _, mode := range modes {
		for _, how := range []string{"incremental", "full"} {
			b.Run(mode+"/"+how, func(b *testing.B) {
				if mode == ModeNftables {
					requireNft(b)
				}
				_, host := testNetns(b)
				svcs, slices := benchCluster()
				cfg := benchConfig()
				ctx := context.Background()
				be := benchBackend(b, mode, host, cfg)
				if _, _, err := be.apply(ctx, nil, svcs, slices); err != nil {
					b.Fatal(err)
				}
				i := 0
				for b.Loop() {
					i++
					// One endpoint of one service moves to a new address.
					slices[i%1000] = makeSlice(fmt.Sprintf("svc-%d", i%1000), "http", 8080, tcp,
						append([]ep{readyEp(fmt.Sprintf("10.245.%d.%d", i/250%250, i%250+1), "node-a")}, epsOf(slices[i%1000])[1:]...)...)
					if how == "full" {
						forget(be)
					}
					if _, _, err := be.apply(ctx, nil, svcs, slices); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkInitialSync writes 1,000 Services and 10,000 endpoints into a node that has only its
// base rules, in each mode (the proxy's first sync).
func BenchmarkInitialSync(b *testing.B) {
	svcs, slices := benchCluster()
	cfg := benchConfig()
	for _, mode := range modes {
		b.Run(mode, func(b *testing.B) {
			if mode == ModeNftables {
				requireNft(b)
			}
			for b.Loop() {
				b.StopTimer()
				_, host := testNetns(b)
				be := benchBackend(b, mode, host, cfg)
				b.StartTimer()
				if _, _, err := be.apply(context.Background(), nil, svcs, slices); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func requireNft(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		tb.Skip("nft not installed (Debian package nftables)")
	}
}

func epsOf(s *discoveryv1.EndpointSlice) []ep {
	var out []ep
	for _, e := range s.Endpoints {
		out = append(out, readyEp(e.Addresses[0], *e.NodeName))
	}
	return out
}
