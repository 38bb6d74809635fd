package proxy

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// The nftables measurement (issue 9): the same 1,000 Services and 10,000 endpoints as
// BenchmarkServiceChange, written the way an nftables backend would (kube-proxy's nftables mode
// is the model: one verdict map keyed by address . protocol . port, a chain per service that picks
// an endpoint chain with numgen, a chain per endpoint that DNATs). skiff has no nftables backend;
// this measures what one would cost, to compare with the iptables figures taken in the same run.

const nftTable = "skbench"

func nftEndpointChain(svc, ep int) string { return fmt.Sprintf("sep-%d-%d", svc, ep) }

// nftServiceRules writes service i's chain and its endpoints' chains (eps are "ip" strings).
func nftServiceRules(b *strings.Builder, i int, eps []string, gen int) {
	fmt.Fprintf(b, "add chain ip %s svc-%d\n", nftTable, i)
	var vmap []string
	for j, ip := range eps {
		ch := nftEndpointChain(i, gen*100+j)
		fmt.Fprintf(b, "add chain ip %s %s\n", nftTable, ch)
		fmt.Fprintf(b, "add rule ip %s %s meta l4proto tcp dnat to %s:8080\n", nftTable, ch, ip)
		vmap = append(vmap, fmt.Sprintf("%d : goto %s", j, ch))
	}
	fmt.Fprintf(b, "add rule ip %s svc-%d numgen random mod %d vmap { %s }\n", nftTable, i, len(eps), strings.Join(vmap, ", "))
}

func nftBenchEndpoints(i int) []string {
	var eps []string
	for j := range 10 {
		eps = append(eps, fmt.Sprintf("10.244.%d.%d", i/25, (i%25)*10+j+1))
	}
	return eps
}

// nftInitial is the whole ruleset of 1,000 services.
func nftInitial() string {
	var b strings.Builder
	fmt.Fprintf(&b, "add table ip %s\n", nftTable)
	fmt.Fprintf(&b, "add map ip %s service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; }\n", nftTable)
	fmt.Fprintf(&b, "add chain ip %s services\n", nftTable)
	fmt.Fprintf(&b, "add rule ip %s services ip daddr . meta l4proto . th dport vmap @service-ips\n", nftTable)
	fmt.Fprintf(&b, "add chain ip %s nat-output { type nat hook output priority -100 ; }\n", nftTable)
	fmt.Fprintf(&b, "add rule ip %s nat-output jump services\n", nftTable)
	var elems []string
	for i := range 1000 {
		nftServiceRules(&b, i, nftBenchEndpoints(i), 0)
		elems = append(elems, fmt.Sprintf("10.96.%d.%d . tcp . 80 : goto svc-%d", i/250, i%250+1, i))
	}
	fmt.Fprintf(&b, "add element ip %s service-ips { %s }\n", nftTable, strings.Join(elems, ", "))
	return b.String()
}

func nftLoad(b *testing.B, h Host, script string) {
	b.Helper()
	if _, err := h.run(context.Background(), script, "nft", "-f", "-"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkNftablesServiceChange: one endpoint of one service moves, as one nft transaction
// (new endpoint chain, the service chain flushed and rewritten, the old endpoint chains deleted),
// on a node that already has 1,000 Services and 10,000 endpoints in nftables.
func BenchmarkNftablesServiceChange(b *testing.B) {
	if _, err := exec.LookPath("nft"); err != nil {
		b.Skip("nft not installed (Debian package nftables)")
	}
	_, host := testNetns(b)
	nftLoad(b, host, nftInitial())
	gens := make([]int, 1000)
	i := 0
	for b.Loop() {
		i++
		svc := i % 1000
		old := gens[svc]
		gens[svc]++
		eps := nftBenchEndpoints(svc)
		eps[0] = fmt.Sprintf("10.245.%d.%d", i/250%250, i%250+1)
		var s strings.Builder
		fmt.Fprintf(&s, "flush chain ip %s svc-%d\n", nftTable, svc)
		for j := range 10 {
			fmt.Fprintf(&s, "flush chain ip %s %s\n", nftTable, nftEndpointChain(svc, old*100+j))
		}
		// nftServiceRules re-adds the (existing, now empty) service chain: "add" of an existing
		// chain is a no-op, its rules are new.
		nftServiceRules(&s, svc, eps, gens[svc])
		for j := range 10 {
			fmt.Fprintf(&s, "delete chain ip %s %s\n", nftTable, nftEndpointChain(svc, old*100+j))
		}
		nftLoad(b, host, s.String())
	}
}

// BenchmarkNftablesInitialSync loads 1,000 Services and 10,000 endpoints into an empty node.
func BenchmarkNftablesInitialSync(b *testing.B) {
	if _, err := exec.LookPath("nft"); err != nil {
		b.Skip("nft not installed (Debian package nftables)")
	}
	script := nftInitial()
	for b.Loop() {
		b.StopTimer()
		_, host := testNetns(b)
		b.StartTimer()
		nftLoad(b, host, script)
	}
}
