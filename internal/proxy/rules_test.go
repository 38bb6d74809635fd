package proxy

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// packet is what the interpreter below follows through a Ruleset.
type packet struct {
	src, dst string
	port     int
	proto    string
}

// local are the addresses the interpreter treats as the node's own (addrtype LOCAL).
var local = []string{"192.168.5.1", "127.0.0.1"}

// outcome is where a new connection ends up: the DNAT destinations it may reach (sorted), or the
// filter's REJECT/DROP, or "" (untouched); and whether it is masqueraded.
type outcome struct {
	targets []string
	verdict string
	masq    bool
}

// follow interprets the subset of iptables the proxy writes, taking every probabilistic branch.
func follow(t *testing.T, table map[string][]string, chain string, p packet, out *outcome) (terminal bool) {
	t.Helper()
	rules, ok := table[chain]
	if !ok {
		t.Fatalf("jump to missing chain %s", chain)
	}
	for _, r := range rules {
		f := strings.Fields(r)
		match, probabilistic := true, false
		for i := 0; i < len(f) && match; i++ {
			neg := i > 0 && f[i-1] == "!"
			switch f[i] {
			case "-d":
				match = inPrefix(p.dst, f[i+1]) != neg
			case "-s":
				match = inPrefix(p.src, f[i+1]) != neg
			case "-p":
				match = f[i+1] == p.proto
			case "--dport":
				match = f[i+1] == strconv.Itoa(p.port)
			case "--dst-type":
				match = slices.Contains(local, p.dst)
			case "--src-type":
				match = slices.Contains(local, p.src)
			case "statistic", "--rcheck":
				probabilistic = true
			case "--comment":
				// Skip the quoted comment, which may hold spaces.
				for i++; i < len(f) && !strings.HasSuffix(f[i], `"`); i++ {
				}
			}
		}
		if !match {
			continue
		}
		j := slices.Index(f, "-j")
		target := f[j+1]
		switch {
		case target == "DNAT":
			out.targets = append(out.targets, f[slices.Index(f, "--to-destination")+1])
			return true
		case target == "REJECT" || target == "DROP":
			out.verdict = target
			return true
		case target == "RETURN":
			return false
		case target == "MARK":
			out.masq = true
		case strings.HasPrefix(target, "SK"):
			if follow(t, table, target, p, out) && !probabilistic {
				return true
			}
		}
	}
	return false
}

func inPrefix(addr, s string) bool {
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		return false
	}
	return pfx.Contains(netip.MustParseAddr(addr))
}

func run(t *testing.T, cfg Config, rs Ruleset, p packet) outcome {
	t.Helper()
	var out outcome
	follow(t, rs.NAT, cfg.servicesChain(), p, &out)
	slices.Sort(out.targets)
	out.targets = slices.Compact(out.targets)
	if len(out.targets) == 0 {
		out.masq = false
		var f outcome
		_ = follow(t, rs.Filter, cfg.filterChain(), p, &f) ||
			follow(t, rs.Filter, cfg.extFilterChain(), p, &f) ||
			follow(t, rs.Filter, cfg.lbFirewallChain(), p, &f)
		out.verdict = f.verdict
	}
	return out
}

const (
	tcp  = corev1.ProtocolTCP
	udp  = corev1.ProtocolUDP
	sctp = corev1.ProtocolSCTP
)

func TestBuild(t *testing.T) {
	fromPod := func(dst string, port int, proto string) packet {
		return packet{src: "10.244.0.7", dst: dst, port: port, proto: proto}
	}
	fromHost := func(dst string, port int) packet {
		return packet{src: "192.168.5.1", dst: dst, port: port, proto: "tcp"}
	}
	fromOutside := func(dst string, port int) packet {
		return packet{src: "192.168.9.9", dst: dst, port: port, proto: "tcp"}
	}
	type check struct {
		name string
		p    packet
		want outcome
	}
	tests := []struct {
		name   string
		svcs   []*corev1.Service
		slices []*discoveryv1.EndpointSlice
		checks []check
	}{{
		name: "cluster IP spreads over ready endpoints only",
		svcs: []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).obj()},
		slices: []*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp,
			readyEp("10.244.1.5", "node-a"), readyEp("10.244.2.5", "node-b"),
			ep{ip: "10.244.3.5", node: "node-b"})},
		checks: []check{
			{"pod", fromPod("10.96.0.10", 80, "tcp"), outcome{targets: []string{"10.244.1.5:8080", "10.244.2.5:8080"}}},
			{"host is masqueraded", fromHost("10.96.0.10", 80), outcome{targets: []string{"10.244.1.5:8080", "10.244.2.5:8080"}, masq: true}},
			{"other port", fromPod("10.96.0.10", 81, "tcp"), outcome{verdict: "REJECT"}},
			{"other protocol", fromPod("10.96.0.10", 80, "udp"), outcome{verdict: "REJECT"}},
			{"VIP without a service", fromPod("10.96.0.99", 80, "tcp"), outcome{verdict: "REJECT"}},
			{"outside the service range", fromPod("10.97.0.10", 80, "tcp"), outcome{}},
		},
	}, {
		name:   "no ready endpoint rejects",
		svcs:   []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).nodePort(30080).obj()},
		slices: []*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp, ep{ip: "10.244.1.5", node: "node-a"})},
		checks: []check{
			{"cluster IP", fromPod("10.96.0.10", 80, "tcp"), outcome{verdict: "REJECT"}},
			{"node port", fromOutside("192.168.5.1", 30080), outcome{verdict: "REJECT"}},
		},
	}, {
		name: "serving terminating endpoints only when none is ready",
		svcs: []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).obj(), makeSvc("api", "10.96.0.11").port("http", 80, tcp).obj()},
		slices: []*discoveryv1.EndpointSlice{
			makeSlice("web", "http", 8080, tcp, ep{ip: "10.244.1.5", node: "node-a", serving: true, terminating: true}, ep{ip: "10.244.1.6", terminating: true}),
			makeSlice("api", "http", 8080, tcp, ep{ip: "10.244.1.7", node: "node-a", serving: true, terminating: true}, readyEp("10.244.1.8", "node-b")),
		},
		checks: []check{
			{"terminating serving", fromPod("10.96.0.10", 80, "tcp"), outcome{targets: []string{"10.244.1.5:8080"}}},
			{"ready wins", fromPod("10.96.0.11", 80, "tcp"), outcome{targets: []string{"10.244.1.8:8080"}}},
		},
	}, {
		name: "headless and ExternalName get no rules",
		svcs: []*corev1.Service{makeSvc("headless", "None").port("http", 80, tcp).obj(),
			{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}},
		slices: []*discoveryv1.EndpointSlice{makeSlice("headless", "http", 8080, tcp, readyEp("10.244.1.5", "node-a"))},
		checks: []check{{"nothing", fromPod("10.244.1.5", 8080, "tcp"), outcome{}}},
	}, {
		name: "a service labelled headless or another proxy's gets no rules",
		svcs: []*corev1.Service{
			withLabel(makeSvc("web", "10.96.0.10").port("http", 80, tcp).obj(), "service.kubernetes.io/headless", ""),
			withLabel(makeSvc("api", "10.96.0.11").port("http", 80, tcp).obj(), "service.kubernetes.io/service-proxy-name", "other"),
		},
		slices: []*discoveryv1.EndpointSlice{
			makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.5", "node-a")),
			makeSlice("api", "http", 8080, tcp, readyEp("10.244.1.6", "node-a")),
		},
		checks: []check{
			{"labelled headless", fromPod("10.96.0.10", 80, "tcp"), outcome{verdict: "REJECT"}},
			{"another proxy's", fromPod("10.96.0.11", 80, "tcp"), outcome{verdict: "REJECT"}},
		},
	}, {
		name: "node ports on node addresses, external IPs and load-balancer IPs, all protocols",
		svcs: []*corev1.Service{
			makeSvc("web", "10.96.0.10").port("http", 80, tcp).nodePort(30080).externalIP("192.168.7.7").obj(),
			makeSvc("dns", "10.96.0.12").port("dns", 53, udp).nodePort(30053).lbIngress("192.168.7.8").obj(),
			makeSvc("sig", "10.96.0.13").port("s", 9, sctp).obj(),
		},
		slices: []*discoveryv1.EndpointSlice{
			makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.5", "node-b")),
			makeSlice("dns", "dns", 5353, udp, readyEp("10.244.1.6", "node-b")),
			makeSlice("sig", "s", 9999, sctp, readyEp("10.244.1.7", "node-b")),
		},
		checks: []check{
			{"node port from outside is masqueraded", fromOutside("192.168.5.1", 30080), outcome{targets: []string{"10.244.1.5:8080"}, masq: true}},
			{"node port on localhost", fromHost("127.0.0.1", 30080), outcome{targets: []string{"10.244.1.5:8080"}, masq: true}},
			{"node port elsewhere", fromOutside("192.168.5.2", 30080), outcome{}},
			{"external IP", fromOutside("192.168.7.7", 80), outcome{targets: []string{"10.244.1.5:8080"}, masq: true}},
			{"udp node port", packet{src: "192.168.9.9", dst: "192.168.5.1", port: 30053, proto: "udp"}, outcome{targets: []string{"10.244.1.6:5353"}, masq: true}},
			{"load-balancer IP", packet{src: "192.168.9.9", dst: "192.168.7.8", port: 53, proto: "udp"}, outcome{targets: []string{"10.244.1.6:5353"}, masq: true}},
			{"sctp", fromPod("10.96.0.13", 9, "sctp"), outcome{targets: []string{"10.244.1.7:9999"}}},
		},
	}, {
		name: "traffic policies Local",
		svcs: []*corev1.Service{
			makeSvc("itp", "10.96.0.10").port("http", 80, tcp).itpLocal().obj(),
			makeSvc("itp-none", "10.96.0.11").port("http", 80, tcp).itpLocal().obj(),
			makeSvc("etp", "10.96.0.12").port("http", 80, tcp).nodePort(30081).etpLocal().obj(),
			makeSvc("etp-none", "10.96.0.13").port("http", 80, tcp).nodePort(30082).etpLocal().obj(),
		},
		slices: []*discoveryv1.EndpointSlice{
			makeSlice("itp", "http", 8080, tcp, readyEp("10.244.1.5", "node-a"), readyEp("10.244.2.5", "node-b")),
			makeSlice("itp-none", "http", 8080, tcp, readyEp("10.244.2.6", "node-b")),
			makeSlice("etp", "http", 8080, tcp, readyEp("10.244.1.7", "node-a"), readyEp("10.244.2.7", "node-b")),
			makeSlice("etp-none", "http", 8080, tcp, readyEp("10.244.2.8", "node-b")),
		},
		checks: []check{
			{"itp local only", fromPod("10.96.0.10", 80, "tcp"), outcome{targets: []string{"10.244.1.5:8080"}}},
			{"itp no local endpoint drops", fromPod("10.96.0.11", 80, "tcp"), outcome{verdict: "DROP"}},
			{"etp cluster IP uses all", fromPod("10.96.0.12", 80, "tcp"), outcome{targets: []string{"10.244.1.7:8080", "10.244.2.7:8080"}}},
			{"etp node port from outside: local only, source kept", fromOutside("192.168.5.1", 30081), outcome{targets: []string{"10.244.1.7:8080"}}},
			{"etp node port from a pod: all", packet{src: "10.244.0.7", dst: "192.168.5.1", port: 30081, proto: "tcp"}, outcome{targets: []string{"10.244.1.7:8080", "10.244.2.7:8080"}}},
			{"etp no local endpoint drops", fromOutside("192.168.5.1", 30082), outcome{verdict: "DROP"}},
			{"etp no local endpoint, from a pod: all", fromPod("192.168.5.1", 30082, "tcp"), outcome{targets: []string{"10.244.2.8:8080"}}},
			{"etp no local endpoint, from the node: all, masqueraded", fromHost("192.168.5.1", 30082), outcome{targets: []string{"10.244.2.8:8080"}, masq: true}},
			{"etp no local endpoint, cluster IP: all", fromPod("10.96.0.13", 80, "tcp"), outcome{targets: []string{"10.244.2.8:8080"}}},
		},
	}, {
		name: "externalTrafficPolicy Local on load-balancer and external IPs",
		svcs: []*corev1.Service{
			makeSvc("lb", "10.96.0.20").port("http", 80, tcp).nodePort(30090).lbIngress("192.168.7.20").externalIP("192.168.7.21").etpLocal().obj(),
			makeSvc("lb-none", "10.96.0.22").port("http", 80, tcp).nodePort(30091).lbIngress("192.168.7.22").externalIP("192.168.7.23").etpLocal().obj(),
		},
		slices: []*discoveryv1.EndpointSlice{
			makeSlice("lb", "http", 8080, tcp, readyEp("10.244.1.20", "node-a"), readyEp("10.244.2.20", "node-b")),
			makeSlice("lb-none", "http", 8080, tcp, readyEp("10.244.2.22", "node-b")),
		},
		checks: []check{
			{"LB IP from outside: local only, source kept", fromOutside("192.168.7.20", 80), outcome{targets: []string{"10.244.1.20:8080"}}},
			{"external IP from outside: local only, source kept", fromOutside("192.168.7.21", 80), outcome{targets: []string{"10.244.1.20:8080"}}},
			{"LB IP from a pod: all", fromPod("192.168.7.20", 80, "tcp"), outcome{targets: []string{"10.244.1.20:8080", "10.244.2.20:8080"}}},
			{"LB IP without local endpoint from outside drops", fromOutside("192.168.7.22", 80), outcome{verdict: "DROP"}},
			{"external IP without local endpoint from outside drops", fromOutside("192.168.7.23", 80), outcome{verdict: "DROP"}},
			{"LB IP without local endpoint from a pod: short-circuit to all", fromPod("192.168.7.22", 80, "tcp"), outcome{targets: []string{"10.244.2.22:8080"}}},
		},
	}, {
		name: "loadBalancerSourceRanges",
		svcs: []*corev1.Service{
			makeSvc("fw", "10.96.0.30").port("http", 80, tcp).nodePort(30095).lbIngress("192.168.7.30").externalIP("192.168.7.31").sourceRanges("192.168.9.0/24").obj(),
			makeSvc("fw-node", "10.96.0.32").port("http", 80, tcp).lbIngress("192.168.5.1").sourceRanges("192.168.5.0/24").obj(),
			makeSvc("fw-annotation", "10.96.0.33").port("http", 80, tcp).lbIngress("192.168.7.33").annotateSourceRanges(" 10.1.0.0/16 , bogus").obj(),
			makeSvc("fw-vip-node", "10.96.0.34").port("http", 80, tcp).lbIngress("192.168.7.34").sourceRanges("192.168.5.0/24").obj(),
			makeSvc("fw-vip", "10.96.0.35").port("http", 80, tcp).lbIngress("192.168.7.35").sourceRanges("10.9.0.0/16").obj(),
		},
		slices: []*discoveryv1.EndpointSlice{
			makeSlice("fw", "http", 8080, tcp, readyEp("10.244.1.30", "node-a")),
			makeSlice("fw-node", "http", 8080, tcp, readyEp("10.244.1.32", "node-a")),
			makeSlice("fw-annotation", "http", 8080, tcp, readyEp("10.244.1.33", "node-a")),
			makeSlice("fw-vip-node", "http", 8080, tcp, readyEp("10.244.1.34", "node-a")),
			makeSlice("fw-vip", "http", 8080, tcp, readyEp("10.244.1.35", "node-a")),
		},
		checks: []check{
			{"source in range", fromOutside("192.168.7.30", 80), outcome{targets: []string{"10.244.1.30:8080"}, masq: true}},
			{"source outside the ranges drops", packet{src: "192.168.10.1", dst: "192.168.7.30", port: 80, proto: "tcp"}, outcome{verdict: "DROP"}},
			{"a pod outside the ranges drops too", fromPod("192.168.7.30", 80, "tcp"), outcome{verdict: "DROP"}},
			{"external IP is not filtered", packet{src: "192.168.10.1", dst: "192.168.7.31", port: 80, proto: "tcp"}, outcome{targets: []string{"10.244.1.30:8080"}, masq: true}},
			{"node port is not filtered", packet{src: "192.168.10.1", dst: "192.168.5.1", port: 30095, proto: "tcp"}, outcome{targets: []string{"10.244.1.30:8080"}, masq: true}},
			{"node's own traffic to a local LB IP, range holds the node", fromHost("192.168.5.1", 80), outcome{targets: []string{"10.244.1.32:8080"}, masq: true}},
			{"annotation ranges", packet{src: "10.1.2.3", dst: "192.168.7.33", port: 80, proto: "tcp"}, outcome{targets: []string{"10.244.1.33:8080"}, masq: true}},
			{"annotation ranges exclude", fromOutside("192.168.7.33", 80), outcome{verdict: "DROP"}},
			// A VIP added as a local address: the node's connection to it has the VIP as source.
			{"node to a local VIP, range holds the node's IP", packet{src: "192.168.7.34", dst: "192.168.7.34", port: 80, proto: "tcp"}, outcome{targets: []string{"10.244.1.34:8080"}, masq: true}},
			{"node to a local VIP, range does not hold the node's IP", packet{src: "192.168.7.35", dst: "192.168.7.35", port: 80, proto: "tcp"}, outcome{verdict: "DROP"}},
		},
	}, {
		name: "endpoints of all slices, deduplicated; other address types ignored",
		svcs: []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).obj()},
		slices: []*discoveryv1.EndpointSlice{
			makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.5", "node-a")),
			makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.5", "node-a"), readyEp("10.244.1.9", "node-a")),
			func() *discoveryv1.EndpointSlice {
				s := makeSlice("web", "http", 8080, tcp, readyEp("fd00::1", "node-a"))
				s.AddressType = discoveryv1.AddressTypeIPv6
				return s
			}(),
			makeSlice("web", "other", 9090, tcp, readyEp("10.244.1.10", "node-a")),
		},
		checks: []check{{"both", fromPod("10.96.0.10", 80, "tcp"), outcome{targets: []string{"10.244.1.5:8080", "10.244.1.9:8080"}}}},
	}}
	for _, mode := range modes {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				cfg := testConfig()
				cfg.NodePortAddresses = []netip.Addr{netip.MustParseAddr("192.168.5.1"), netip.MustParseAddr("127.0.0.1")}
				cfg.NodeIP = netip.MustParseAddr("192.168.5.1")
				for _, c := range tt.checks {
					got := runMode(t, mode, cfg, tt.svcs, tt.slices, c.p)
					if !slices.Equal(got.targets, c.want.targets) || got.verdict != c.want.verdict || got.masq != c.want.masq {
						t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
					}
				}
			})
		}
	}
}

func TestBuildSpreadsEvenly(t *testing.T) {
	cfg := testConfig()
	var eps []ep
	for i := range 4 {
		eps = append(eps, readyEp("10.244.1."+strconv.Itoa(i+1), "node-a"))
	}
	rs := Build(cfg, []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).obj()},
		[]*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp, eps...)})
	var chain []string
	for name, rules := range rs.NAT {
		if strings.Contains(name, "-SVC-") {
			for _, r := range rules {
				if strings.Contains(r, "-SEP-") {
					chain = append(chain, r)
				}
			}
		}
	}
	// 1/4, 1/3, 1/2, then the rest: each endpoint gets a quarter of new connections.
	want := []string{"0.2500000000", "0.3333333333", "0.5000000000", ""}
	if len(chain) != len(want) {
		t.Fatalf("service chain %q", chain)
	}
	for i, w := range want {
		if w == "" && strings.Contains(chain[i], "statistic") || w != "" && !strings.Contains(chain[i], "--probability "+w) {
			t.Errorf("rule %d = %q, want probability %q", i, chain[i], w)
		}
	}
}

func TestBuildSessionAffinity(t *testing.T) {
	cfg := testConfig()
	rs := Build(cfg, []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).affinity().obj()},
		[]*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.1", "a"), readyEp("10.244.1.2", "a"))})
	recentChecks, recentSets := 0, 0
	for name, rules := range rs.NAT {
		for _, r := range rules {
			if strings.Contains(r, "--rcheck --seconds 10800") && strings.Contains(name, "-SVC-") {
				recentChecks++
			}
			if strings.Contains(r, "recent --set --name "+name) && strings.Contains(r, "DNAT") {
				recentSets++
			}
		}
	}
	if recentChecks != 2 || recentSets != 2 {
		t.Errorf("ClientIP affinity: %d recent checks, %d sets, want 2 and 2:\n%v", recentChecks, recentSets, rs.NAT)
	}
}

func TestBuildHairpinMasquerades(t *testing.T) {
	cfg := testConfig()
	for _, mode := range modes {
		got := runMode(t, mode, cfg, []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).obj()},
			[]*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.1", "a"))},
			packet{src: "10.244.1.1", dst: "10.96.0.10", port: 80, proto: "tcp"})
		if !got.masq || len(got.targets) != 1 {
			t.Errorf("%s: a pod reaching itself through its service: %+v, want masqueraded", mode, got)
		}
	}
}

func TestNodePrefix(t *testing.T) {
	a, b := NodePrefix("/var/lib/skiff"), NodePrefix("/tmp/other")
	if a != NodePrefix("/var/lib/skiff") || a == b || len(a) != 8 {
		t.Errorf("prefixes %q %q: want stable, distinct, 8 characters", a, b)
	}
	// The longest chain name stays within iptables' 28 characters.
	cfg := testConfig()
	rs := Build(cfg, []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).nodePort(30000).etpLocal().obj()},
		[]*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.1", "node-a"))})
	for _, table := range []map[string][]string{rs.NAT, rs.Filter} {
		for name := range table {
			if len(name) > 28 {
				t.Errorf("chain %s is longer than 28 characters", name)
			}
		}
	}
}

func TestBuildExternalChainsOnlyWhenExposed(t *testing.T) {
	cfg := testConfig()
	rs := Build(cfg, []*corev1.Service{
		makeSvc("internal", "10.96.0.10").port("http", 80, tcp).obj(),
		makeSvc("exposed", "10.96.0.11").port("http", 80, tcp).nodePort(30001).obj(),
	}, []*discoveryv1.EndpointSlice{
		makeSlice("internal", "http", 8080, tcp, readyEp("10.244.1.1", "node-a")),
		makeSlice("exposed", "http", 8080, tcp, readyEp("10.244.1.2", "node-a")),
	})
	ext := 0
	for name := range rs.NAT {
		if strings.Contains(name, "-EXT-") {
			ext++
		}
	}
	if ext != 1 {
		t.Errorf("%d external chains, want 1 (for the NodePort service only)", ext)
	}
}

// TestBuildGoldenLocalWithSourceRanges pins the exact rules of one LoadBalancer Service with
// externalTrafficPolicy Local and loadBalancerSourceRanges, with one local and one remote endpoint.
func TestBuildGoldenLocalWithSourceRanges(t *testing.T) {
	cfg := testConfig()
	cfg.NodeIP = netip.MustParseAddr("192.168.5.1")
	rs := Build(cfg, []*corev1.Service{
		makeSvc("web", "10.96.0.10").port("http", 80, tcp).nodePort(30080).lbIngress("192.168.5.1").etpLocal().sourceRanges("192.168.0.0/16").obj(),
	}, []*discoveryv1.EndpointSlice{
		makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.5", "node-a"), readyEp("10.244.2.5", "node-b")),
	})
	var got strings.Builder
	for _, table := range []struct {
		name   string
		chains map[string][]string
	}{{"nat", rs.NAT}, {"filter", rs.Filter}} {
		names := make([]string, 0, len(table.chains))
		for n := range table.chains {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			for _, r := range table.chains[n] {
				got.WriteString(table.name + " -A " + n + " " + r + "\n")
			}
		}
	}
	id := hash("ns/web:http/TCP")[:12]
	sep := func(e string) string { return "SKTEST01-SEP-" + hash(id + "/" + e)[:12] }
	want := strings.NewReplacer("{ID}", id, "SEPL", sep("10.244.1.5:8080"), "SEPR", sep("10.244.2.5:8080")).Replace(`nat -A SKTEST01-EXT-{ID} -s 10.244.0.0/16 -j SKTEST01-SVC-{ID}
nat -A SKTEST01-EXT-{ID} -m addrtype --src-type LOCAL -j SKTEST01-MARK-MASQ
nat -A SKTEST01-EXT-{ID} -m addrtype --src-type LOCAL -j SKTEST01-SVC-{ID}
nat -A SKTEST01-EXT-{ID} -j SKTEST01-SVL-{ID}
nat -A SKTEST01-FW-{ID} -s 192.168.0.0/16 -j SKTEST01-EXT-{ID}
nat -A SKTEST01-FW-{ID} -s 192.168.5.1/32 -j SKTEST01-EXT-{ID}
nat -A SKTEST01-MARK-MASQ -j MARK --or-mark 0x4000
nat -A SKTEST01-NODEPORTS -m comment --comment "ns/web:http" -p tcp -m tcp --dport 30080 -j SKTEST01-EXT-{ID}
nat -A SKTEST01-POSTRTG -m mark ! --mark 0x4000/0x4000 -j RETURN
nat -A SKTEST01-POSTRTG -j MARK --xor-mark 0x4000
nat -A SKTEST01-POSTRTG -j MASQUERADE --random-fully
nat -A SEPL -s 10.244.1.5/32 -j SKTEST01-MARK-MASQ
nat -A SEPL -p tcp -m tcp -j DNAT --to-destination 10.244.1.5:8080
nat -A SEPR -s 10.244.2.5/32 -j SKTEST01-MARK-MASQ
nat -A SEPR -p tcp -m tcp -j DNAT --to-destination 10.244.2.5:8080
nat -A SKTEST01-SERVICES -m comment --comment "ns/web:http" -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j SKTEST01-SVC-{ID}
nat -A SKTEST01-SERVICES -m comment --comment "ns/web:http" -d 192.168.5.1/32 -p tcp -m tcp --dport 80 -j SKTEST01-FW-{ID}
nat -A SKTEST01-SERVICES -m addrtype --dst-type LOCAL -j SKTEST01-NODEPORTS
nat -A SKTEST01-SVC-{ID} ! -s 10.244.0.0/16 -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j SKTEST01-MARK-MASQ
nat -A SKTEST01-SVC-{ID} -m statistic --mode random --probability 0.5000000000 -j SEPL
nat -A SKTEST01-SVC-{ID} -j SEPR
nat -A SKTEST01-SVL-{ID} ! -s 10.244.0.0/16 -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j SKTEST01-MARK-MASQ
nat -A SKTEST01-SVL-{ID} -j SEPL
filter -A SKTEST01-FILTER -d 10.96.0.0/24 -m comment --comment "service range without rules" -j REJECT --reject-with icmp-port-unreachable
filter -A SKTEST01-FORWARD -m conntrack --ctstate INVALID -m comment --comment "conntrack INVALID, kubernetes#74839" -j DROP
filter -A SKTEST01-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
filter -A SKTEST01-LBFW -m comment --comment "ns/web:http" -d 192.168.5.1/32 -p tcp -m tcp --dport 80 -m comment --comment "not in loadBalancerSourceRanges" -j DROP
`)
	// Chain names sort by their hash; compare line sets so the endpoint chains' order does not matter.
	gotLines, wantLines := strings.Split(got.String(), "\n"), strings.Split(want, "\n")
	slices.Sort(gotLines)
	slices.Sort(wantLines)
	if !slices.Equal(gotLines, wantLines) {
		t.Errorf("rules:\n%s\nwant:\n%s", got.String(), want)
	}
}

// withLabel sets a label on svc.
func withLabel(svc *corev1.Service, key, value string) *corev1.Service {
	if svc.Labels == nil {
		svc.Labels = map[string]string{}
	}
	svc.Labels[key] = value
	return svc
}
