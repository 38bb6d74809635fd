package netpol

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/netnstest"
	"github.com/skiff-sh/skiff/internal/netpol/workload"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// The benchmarks measure the agent on workload.Default() (1,000 policies, 5,000 pods on 3
// nodes, 50 namespaces), always for its first node. Those on a real table (BenchmarkChange,
// BenchmarkConnect) work in network namespaces of their own and skip without root or nft:
//
//	go test ./internal/netpol -run X -bench . -benchtime 10x

const benchTable = "skiff-netpol-bench"

func benchInput(w *workload.World) Input {
	return Input{NodeName: w.Nodes[0], Policies: w.Policies, Pods: w.Pods, Namespaces: w.Namespaces}
}

// BenchmarkBuild is the pure part of a sync: the whole ruleset of one node from the whole
// cluster's objects. It reports the ruleset's size: rules, set and map elements, chains, sets,
// isolated local pods, and the bytes of the nft script that writes it whole.
func BenchmarkBuild(b *testing.B) {
	in := benchInput(workload.Generate(workload.Default()))
	b.ReportAllocs()
	var rs Ruleset
	for b.Loop() {
		rs = Build(in)
	}
	script, _ := Plan(benchTable, nil, rs)
	b.ReportMetric(float64(rs.Rules()), "rules")
	b.ReportMetric(float64(rs.Elements()), "elements")
	b.ReportMetric(float64(len(rs.Chains)), "chains")
	b.ReportMetric(float64(len(rs.Sets)), "sets")
	b.ReportMetric(float64(len(rs.Maps[mapIngress])), "ingress-isolated-pods")
	b.ReportMetric(float64(len(rs.Maps[mapEgress])), "egress-isolated-pods")
	b.ReportMetric(float64(len(script)), "full-script-B")
}

// cpuTime is the CPU time the process used (user and system) and the time of its waited-for
// children (nft).
type cpuTime struct{ self, children time.Duration }

func readCPU(tb testing.TB) cpuTime {
	var self, children unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &self); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &children); err != nil {
		tb.Fatal(err)
	}
	used := func(r unix.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return cpuTime{used(self), used(children)}
}

// percentile is the p-th percentile (0 < p <= 1) of ds by the nearest-rank method.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p*float64(len(s)) + 0.999999)
	return s[min(max(rank, 1), len(s))-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkChange is the time from one change of the cluster's objects to the rules enforcing
// it: Build, Plan and `nft -f` on a network namespace of the benchmark's own whose table holds
// the whole ruleset, one change per iteration. "incremental/<change>" is what the agent does;
// "full-rewrite/mixed" replaces the table whole per change (the same changes as
// "incremental/mixed"), what the diff saves. It reports the latency's p50 and p99 (ns/op is the
// mean), the transaction's bytes, the CPU time of the process and of nft per change, and how
// many changes left this node's rules as they were (a change in pods of another node only).
func BenchmarkChange(b *testing.B) {
	type mode struct {
		name    string
		changes []workload.Change
		full    bool
	}
	var modes []mode
	for _, c := range workload.Changes() {
		modes = append(modes, mode{"incremental/" + string(c), []workload.Change{c}, false})
	}
	modes = append(modes, mode{"incremental/mixed", workload.Changes(), false}, mode{"full-rewrite/mixed", workload.Changes(), true})
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			host := proxy.Host{Wrap: []string{"ip", "netns", "exec", netnstest.New(b, "sknb", "nft")}}
			ctx := context.Background()
			w := workload.Generate(workload.Default())
			prev := Build(benchInput(w))
			script, _ := Plan(benchTable, nil, prev)
			if err := host.NftApply(ctx, script); err != nil {
				b.Fatal(err)
			}
			var latencies []time.Duration
			var used cpuTime
			bytes, unchanged := 0, 0
			for b.Loop() {
				b.StopTimer()
				w.Change(m.changes[len(latencies)%len(m.changes)])
				b.StartTimer()
				start, cpu0 := time.Now(), readCPU(b)
				next := Build(benchInput(w))
				base := &prev
				if m.full {
					base = nil
				}
				script, changed := Plan(benchTable, base, next)
				if changed {
					if err := host.NftApply(ctx, script); err != nil {
						b.Fatal(err)
					}
				} else {
					unchanged++
				}
				cpu1 := readCPU(b)
				latencies = append(latencies, time.Since(start))
				used.self += cpu1.self - cpu0.self
				used.children += cpu1.children - cpu0.children
				bytes += len(script)
				prev = next
			}
			n := float64(len(latencies))
			b.ReportMetric(ms(percentile(latencies, 0.5)), "p50-ms")
			b.ReportMetric(ms(percentile(latencies, 0.99)), "p99-ms")
			b.ReportMetric(float64(bytes)/n, "script-B")
			b.ReportMetric(ms(used.self+used.children)/n, "cpu-ms")
			b.ReportMetric(ms(used.children)/n, "nft-cpu-ms")
			b.ReportMetric(float64(unchanged)/n, "unchanged-frac")
		})
	}
}

// benchPort is the port the packet path benchmark's servers listen on: no generated policy
// names it, so every policy chain of the pods is walked without accepting.
const benchPort = 7777

// benchBridge makes a node network namespace whose bridge br0 has the first address of cidr,
// with bridged traffic passing the forward hook, as on a worker.
func benchBridge(tb testing.TB, cidr netip.Prefix) string {
	node := netnstest.New(tb, "sknb", "nft", "sysctl")
	gw := cidr.Addr().Next()
	netnstest.MustRun(tb, "ip", "-n", node, "link", "add", "br0", "type", "bridge")
	netnstest.MustRun(tb, "ip", "-n", node, "addr", "add", netip.PrefixFrom(gw, cidr.Bits()).String(), "dev", "br0")
	netnstest.MustRun(tb, "ip", "-n", node, "link", "set", "br0", "up")
	netnstest.MustRun(tb, "ip", "netns", "exec", node, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1")
	return node
}

// benchPod plugs a pod namespace with address addr into node's bridge and returns its name.
func benchPod(tb testing.TB, node string, i int, addr netip.Addr, bits int) string {
	pns := netnstest.New(tb, "sknbp", "ip")
	veth := fmt.Sprintf("v%d", i)
	netnstest.MustRun(tb, "ip", "-n", node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", pns)
	netnstest.MustRun(tb, "ip", "-n", node, "link", "set", veth, "master", "br0", "up")
	netnstest.MustRun(tb, "ip", "-n", pns, "addr", "add", netip.PrefixFrom(addr, bits).String(), "dev", "eth0")
	netnstest.MustRun(tb, "ip", "-n", pns, "link", "set", "eth0", "up")
	return pns
}

// serve accepts and closes connections on addr:benchPort inside pns until the benchmark ends.
func serve(tb testing.TB, pns string, addr netip.Addr) {
	var ln net.Listener
	var err error
	if rerr := netnstest.Run(pns, func() { ln, err = net.Listen("tcp4", netip.AddrPortFrom(addr, benchPort).String()) }); rerr != nil || err != nil {
		tb.Fatalf("listen in %s: %v %v", pns, rerr, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
}

// dialer connects from inside a pod namespace on request, from one OS thread that stays there.
type dialer struct {
	to   chan dialRequest
	took chan dialResult
}

type dialRequest struct {
	addr    netip.Addr
	timeout time.Duration
}

type dialResult struct {
	d   time.Duration
	err error
}

func startDialer(tb testing.TB, pns string) *dialer {
	d := &dialer{to: make(chan dialRequest), took: make(chan dialResult)}
	var wg sync.WaitGroup
	wg.Go(func() {
		err := netnstest.Run(pns, func() {
			for r := range d.to {
				start := time.Now()
				c, err := net.DialTimeout("tcp4", netip.AddrPortFrom(r.addr, benchPort).String(), r.timeout)
				if err == nil {
					c.Close()
				}
				d.took <- dialResult{time.Since(start), err}
			}
		})
		if err != nil {
			tb.Error(err)
			close(d.took)
		}
	})
	tb.Cleanup(func() { close(d.to); wg.Wait() })
	return d
}

// dial is one connection (connect and close) to addr's bench port, given timeout to connect.
func (d *dialer) dial(addr netip.Addr, timeout time.Duration) (time.Duration, error) {
	d.to <- dialRequest{addr, timeout}
	r, ok := <-d.took
	if !ok {
		return 0, fmt.Errorf("dialer gone")
	}
	return r.d, r.err
}

// connectRounds is how many rounds of three connections one iteration of BenchmarkConnect makes.
const connectRounds = 100

// BenchmarkConnect is the packet path's cost per new TCP connection (connect and close between
// two pod namespaces on a node's bridge) in three places measured in turn, one connection each
// per iteration, so that the machine's load falls on all three alike:
//   - plain: a node with no table at all (no conntrack either);
//   - open: the node's table of the 1,000 policies, between two pods no policy selects (the
//     verdict maps miss);
//   - policy: the same table, from the local pod with the longest egress selection chain to the
//     one with the longest ingress selection chain; no generated policy allows the port, so the
//     packet walks every policy chain of both pods and is accepted by a last policy of each.
//
// An iteration is connectRounds rounds of one connection to each (so that the -benchtime of the
// other benchmarks gives enough connections here too); ns/op is its time. It reports each one's mean and p50 per connection, the policy
// path's extra cost over plain and over open (of the means and of the medians: on a loaded machine
// the means carry the scheduler's noise), and how many policy chains the path jumps to.
func BenchmarkConnect(b *testing.B) {
	ctx := context.Background()
	w := workload.Generate(workload.Default())
	cidr := workload.PodCIDR(0)
	srv, inJumps := w.MostIsolated(0, networkingv1.PolicyTypeIngress, nil)
	cli, outJumps := w.MostIsolated(0, networkingv1.PolicyTypeEgress, srv)
	srvAddr, cliAddr := netip.MustParseAddr(srv.Status.PodIP), netip.MustParseAddr(cli.Status.PodIP)
	b.Logf("policy path: %s/%s (%s, egress: %d policies) -> %s/%s (%s, ingress: %d policies), then one more each",
		cli.Namespace, cli.Name, cliAddr, outJumps, srv.Namespace, srv.Name, srvAddr, inJumps)
	w.Namespaces = append(w.Namespaces, workload.Namespace("bench-open", nil))
	openSrv := w.AddPod("bench-open", "open-server", map[string]string{"app": "bench-open"}, 0)
	openCli := w.AddPod("bench-open", "open-client", map[string]string{"app": "bench-open"}, 0)
	openSrvAddr, openCliAddr := netip.MustParseAddr(openSrv.Status.PodIP), netip.MustParseAddr(openCli.Status.PodIP)

	plainNode := benchBridge(b, cidr)
	plainSrv, plainCli := benchPod(b, plainNode, 0, srvAddr, cidr.Bits()), benchPod(b, plainNode, 1, cliAddr, cidr.Bits())
	node := benchBridge(b, cidr)
	host := proxy.Host{Wrap: []string{"ip", "netns", "exec", node}}
	pods := map[netip.Addr]string{}
	for i, a := range []netip.Addr{srvAddr, cliAddr, openSrvAddr, openCliAddr} {
		pods[a] = benchPod(b, node, i, a, cidr.Bits())
	}
	serve(b, plainSrv, srvAddr)
	serve(b, pods[srvAddr], srvAddr)
	serve(b, pods[openSrvAddr], openSrvAddr)
	plain, policy, open := startDialer(b, plainCli), startDialer(b, pods[cliAddr]), startDialer(b, pods[openCliAddr])

	// Control: the generated policies alone drop the connection, so the path walks them all.
	prev := Build(benchInput(w))
	script, _ := Plan(benchTable, nil, prev)
	if err := host.NftApply(ctx, script); err != nil {
		b.Fatal(err)
	}
	if _, err := policy.dial(srvAddr, time.Second); !isTimeout(err) {
		b.Fatalf("%s -> %s:%d without the last policies: %v, want dropped", cliAddr, srvAddr, benchPort, err)
	}
	if in, out, err := DroppedPackets(ctx, host, benchTable); err != nil || in+out == 0 {
		b.Fatalf("the control connection timed out but no drop was counted (%d, %d, %v)", in, out, err)
	}
	w.Policies = append(w.Policies, workload.AllowLast(networkingv1.PolicyTypeIngress, srv, cli, benchPort),
		workload.AllowLast(networkingv1.PolicyTypeEgress, cli, srv, benchPort))
	next := Build(benchInput(w))
	script, _ = Plan(benchTable, &prev, next)
	if err := host.NftApply(ctx, script); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		d    *dialer
		addr netip.Addr
	}{{plain, srvAddr}, {policy, srvAddr}, {open, openSrvAddr}} {
		if _, err := c.d.dial(c.addr, 5*time.Second); err != nil {
			b.Fatalf("%s:%d not reached: %v", c.addr, benchPort, err)
		}
	}

	var took [3][]time.Duration
	for b.Loop() {
		for range connectRounds {
			for i, c := range []struct {
				d    *dialer
				addr netip.Addr
			}{{plain, srvAddr}, {open, openSrvAddr}, {policy, srvAddr}} {
				d, err := c.d.dial(c.addr, 5*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				took[i] = append(took[i], d)
			}
		}
	}
	mean := func(ds []time.Duration) float64 {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		return float64(sum) / float64(len(ds))
	}
	for i, name := range []string{"plain", "open", "policy"} {
		b.ReportMetric(mean(took[i]), name+"-ns/conn")
		b.ReportMetric(float64(percentile(took[i], 0.5)), name+"-p50-ns")
	}
	b.ReportMetric(mean(took[2])-mean(took[0]), "policy-over-plain-ns/conn")
	b.ReportMetric(mean(took[2])-mean(took[1]), "policy-over-open-ns/conn")
	p50 := func(i int) float64 { return float64(percentile(took[i], 0.5)) }
	b.ReportMetric(p50(2)-p50(0), "policy-over-plain-p50-ns")
	b.ReportMetric(p50(2)-p50(1), "policy-over-open-p50-ns")
	b.ReportMetric(float64(inJumps+outJumps+2), "policy-chains")
}

// BenchmarkAgent is the time from a policy write to its enforcement through the whole agent
// (informers, batching, Build, Plan, nft), on a fake API holding the workload and a node
// namespace with the two pods of BenchmarkConnect's policy path, its egress side allowed: each
// iteration creates the policy that allows its ingress side and waits for the first accepted
// connection (probes every 20 ms), then deletes it again (untimed). It reports that time's p50 and p99, the agent's own figure
// for the same syncs (SyncResult.Latency: from the informer's event to nft's return), and the
// CPU of the benchmark's process and of nft per policy write.
func BenchmarkAgent(b *testing.B) {
	w := workload.Generate(workload.Default())
	cidr := workload.PodCIDR(0)
	srv, _ := w.MostIsolated(0, networkingv1.PolicyTypeIngress, nil)
	cli, _ := w.MostIsolated(0, networkingv1.PolicyTypeEgress, srv)
	srvAddr, cliAddr := netip.MustParseAddr(srv.Status.PodIP), netip.MustParseAddr(cli.Status.PodIP)
	node := benchBridge(b, cidr)
	srvNS, cliNS := benchPod(b, node, 0, srvAddr, cidr.Bits()), benchPod(b, node, 1, cliAddr, cidr.Bits())
	serve(b, srvNS, srvAddr)
	policy := startDialer(b, cliNS)

	var objs []runtime.Object
	for _, o := range w.Namespaces {
		objs = append(objs, o)
	}
	for _, o := range w.Pods {
		objs = append(objs, o)
	}
	for _, o := range w.Policies {
		objs = append(objs, o)
	}
	client := fake.NewClientset(objs...)
	synced := make(chan SyncResult, 16)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		err := Run(ctx, client, Options{NodeName: w.Nodes[0], Prefix: "bench", BridgeNetfilter: "-",
			Host: proxy.Host{Wrap: []string{"ip", "netns", "exec", node}}, Logger: slog.New(slog.DiscardHandler),
			OnSync: func(r SyncResult) { synced <- r }})
		if err != nil {
			b.Error(err)
		}
	})
	defer func() { cancel(); wg.Wait() }()
	select {
	case <-synced: // the first, full sync
	case <-time.After(5 * time.Minute):
		b.Fatal("no first sync in 5 minutes")
	}
	if _, err := policy.dial(srvAddr, time.Second); !isTimeout(err) {
		b.Fatalf("%s -> %s:%d before the allowing policies: %v, want dropped", cliAddr, srvAddr, benchPort, err)
	}

	nps := client.NetworkingV1().NetworkPolicies
	// The egress side is allowed for good; each iteration creates and deletes the ingress side,
	// one change and so one sync each.
	out := workload.AllowLast(networkingv1.PolicyTypeEgress, cli, srv, benchPort)
	if _, err := nps(out.Namespace).Create(ctx, out, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	in := workload.AllowLast(networkingv1.PolicyTypeIngress, srv, cli, benchPort)
	next := func() SyncResult {
		select {
		case r := <-synced:
			return r
		case <-time.After(5 * time.Minute):
			b.Fatal("no sync in 5 minutes")
		}
		return SyncResult{}
	}
	next()
	var enforced, agentLatency []time.Duration
	var used cpuTime
	for b.Loop() {
		start, cpu0 := time.Now(), readCPU(b)
		if _, err := nps(in.Namespace).Create(ctx, in, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := policy.dial(srvAddr, 20*time.Millisecond); err == nil {
				break
			} else if !isTimeout(err) {
				b.Fatal(err)
			}
			if time.Since(start) > 5*time.Minute {
				b.Fatal("the allowing policy not enforced in 5 minutes")
			}
		}
		enforced = append(enforced, time.Since(start))
		agentLatency = append(agentLatency, next().Latency)
		cpu1 := readCPU(b)
		used.self += cpu1.self - cpu0.self
		used.children += cpu1.children - cpu0.children
		b.StopTimer()
		if err := nps(in.Namespace).Delete(ctx, in.Name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		next()
		b.StartTimer()
	}
	n := float64(len(enforced))
	b.ReportMetric(ms(percentile(enforced, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(enforced, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(agentLatency, 0.5)), "agent-p50-ms")
	b.ReportMetric(ms(used.self+used.children)/n, "cpu-ms")
	b.ReportMetric(ms(used.children)/n, "nft-cpu-ms")
}
