package proxy

import (
	"context"
	"fmt"
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

// BenchmarkServiceChange programs one Service's endpoint change on a node (its own network
// namespace) that already has 1,000 Services and 10,000 endpoints: Build, Plan and
// iptables-restore. "incremental" rewrites the changed chains only (what the proxier does);
// "full" rewrites every chain, as a proxy without a diff would.
func BenchmarkServiceChange(b *testing.B) {
	for _, mode := range []string{"incremental", "full"} {
		b.Run(mode, func(b *testing.B) {
			_, host := testNetns(b)
			svcs, slices := benchCluster()
			cfg := benchConfig()
			ctx := context.Background()
			prev := Build(cfg, svcs, slices)
			input, _ := Plan(nil, prev)
			if err := host.Restore(ctx, input); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				// One endpoint of one service moves to a new address.
				slices[i%1000] = makeSlice(fmt.Sprintf("svc-%d", i%1000), "http", 8080, tcp,
					append([]ep{readyEp(fmt.Sprintf("10.245.%d.%d", i/250%250, i%250+1), "node-a")}, epsOf(slices[i%1000])[1:]...)...)
				next := Build(cfg, svcs, slices)
				base := &prev
				if mode == "full" {
					base = unknown(&prev)
				}
				input, _ := Plan(base, next)
				if err := host.Restore(ctx, input); err != nil {
					b.Fatal(err)
				}
				prev = next
			}
		})
	}
}

// BenchmarkInitialSync writes 1,000 Services and 10,000 endpoints into an empty node.
func BenchmarkInitialSync(b *testing.B) {
	svcs, slices := benchCluster()
	cfg := benchConfig()
	for b.Loop() {
		b.StopTimer()
		_, host := testNetns(b)
		b.StartTimer()
		input, _ := Plan(nil, Build(cfg, svcs, slices))
		if err := host.Restore(context.Background(), input); err != nil {
			b.Fatal(err)
		}
	}
}

func epsOf(s *discoveryv1.EndpointSlice) []ep {
	var out []ep
	for _, e := range s.Endpoints {
		out = append(out, readyEp(e.Addresses[0], *e.NodeName))
	}
	return out
}
