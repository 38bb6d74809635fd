package netpol

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// world is the cluster most cases share: node n1 (this one) and n2; namespaces a (team=x) and b.
func world(policies ...*networkingv1.NetworkPolicy) Input {
	return Input{NodeName: "n1",
		Namespaces: []*corev1.Namespace{ns("a", map[string]string{"team": "x"}), ns("b", nil)},
		Pods: []*corev1.Pod{
			MakePod("a", "web").Node("n1").IP("10.42.0.5").Label("app", "web").Port("http", 8080, corev1.ProtocolTCP).Obj(),
			MakePod("a", "web2").Node("n1").IP("10.42.0.6").Label("app", "web").Port("http", 9090, corev1.ProtocolTCP).Obj(),
			MakePod("a", "db").Node("n2").IP("10.42.1.5").Label("app", "db").Port("sql", 5432, corev1.ProtocolTCP).Port("sql", 5433, corev1.ProtocolUDP).Obj(),
			MakePod("b", "cli").Node("n1").IP("10.42.0.9").Label("app", "cli").Obj(),
			MakePod("b", "side").Node("n2").IP("10.42.1.9").Label("app", "cli").SidecarPort("metrics", 9100).Obj(),
			MakePod("b", "done").Node("n1").IP("10.42.0.10").Label("app", "cli").Phase(corev1.PodSucceeded).Obj(),
			MakePod("b", "host").Node("n1").IP("192.168.0.1").Label("app", "cli").HostNetwork().Obj(),
		},
		Policies: policies,
	}
}

// policyRulesFor are the rules of np's chain in direction d.
func policyRulesFor(rs Ruleset, d direction, np *networkingv1.NetworkPolicy) []string {
	return rs.Chains[policyChain(d, np)]
}

func TestBuild(t *testing.T) {
	denyA := MakePolicy("a", "deny").Obj()
	web := MakePolicy("a", "web").Select("app", "web").
		Ingress(nil, named("http")).
		Ingress([]networkingv1.NetworkPolicyPeer{nsPeer("team", "x"), ipPeer("10.42.0.0/16", "10.42.0.9/32")}, tcp(80), portOf(corev1.ProtocolUDP, intstr.FromInt32(1000), 2000)).Obj()
	egressB := MakePolicy("b", "eg").Egress([]networkingv1.NetworkPolicyPeer{podPeer("app", "db"), nsPeer("team", "x")}, named("sql")).
		Egress(nil, portOf(corev1.ProtocolUDP, intstr.FromInt32(53), 0)).Obj()
	egressOnly := MakePolicy("b", "eo").Types(networkingv1.PolicyTypeEgress).Obj()
	both := MakePolicy("a", "both").Select("app", "web").Ingress([]networkingv1.NetworkPolicyPeer{{
		PodSelector: podPeer("app", "cli").PodSelector, NamespaceSelector: nsPeer("kubernetes.io/metadata.name", "b").NamespaceSelector}}).Obj()
	sctp := MakePolicy("a", "sctp").Select("app", "web").Ingress(nil, portOf(corev1.ProtocolSCTP, intstr.FromInt32(7), 0),
		networkingv1.NetworkPolicyPort{Protocol: ptrTo(corev1.ProtocolUDP)}).Obj()
	egressNamedAny := MakePolicy("b", "named-any").Types(networkingv1.PolicyTypeEgress).Egress(nil, named("metrics")).Obj()

	tests := []struct {
		name  string
		in    Input
		check func(t *testing.T, rs Ruleset)
	}{
		{name: "no policy: no pod is isolated", in: world(), check: func(t *testing.T, rs Ruleset) {
			wantKeys(t, "ingress map", rs.Maps[mapIngress])
			wantKeys(t, "egress map", rs.Maps[mapEgress])
			if len(rs.Chains) != 2 || len(rs.Sets) != 0 {
				t.Errorf("want only the base chains, got chains %v sets %v", keys(rs.Chains), keys(rs.Sets))
			}
		}},
		{name: "default deny: every local pod of the namespace, nothing allowed", in: world(denyA), check: func(t *testing.T, rs Ruleset) {
			wantKeys(t, "ingress map", rs.Maps[mapIngress], "10.42.0.5", "10.42.0.6")
			wantKeys(t, "egress map", rs.Maps[mapEgress])
			if r := policyRulesFor(rs, ingress, denyA); len(r) != 0 {
				t.Errorf("deny-all chain has rules %q", r)
			}
			sel := strings.TrimPrefix(rs.Maps[mapIngress]["10.42.0.5"], "jump ")
			if got := rs.Chains[sel]; !slices.Equal(got, []string{"jump " + policyChain(ingress, denyA), "counter name dropped-ingress drop"}) {
				t.Errorf("selection chain %q", got)
			}
		}},
		{name: "pods selected by the same policies share one selection chain", in: world(denyA, web), check: func(t *testing.T, rs Ruleset) {
			if a, b := rs.Maps[mapIngress]["10.42.0.5"], rs.Maps[mapIngress]["10.42.0.6"]; a != b {
				t.Errorf("web and web2 jump to %q and %q", a, b)
			}
		}},
		{name: "named ports resolve per selected pod; peers merge pods and ipBlock minus except", in: world(web), check: func(t *testing.T, rs Ruleset) {
			wantRules(t, expand(rs, policyRulesFor(rs, ingress, web)),
				`meta l4proto tcp ip daddr . th dport @{10.42.0.5 . 8080, 10.42.0.6 . 9090} accept comment "a/web"`,
				`ip saddr @{10.42.0.0-10.42.0.8, 10.42.0.10-10.42.255.255} meta l4proto tcp th dport 80 accept comment "a/web"`,
				`ip saddr @{10.42.0.0-10.42.0.8, 10.42.0.10-10.42.255.255} meta l4proto udp th dport 1000-2000 accept comment "a/web"`)
		}},
		{name: "egress isolates by default when the policy has egress rules; named port per peer pod", in: world(egressB), check: func(t *testing.T, rs Ruleset) {
			wantKeys(t, "egress map", rs.Maps[mapEgress], "10.42.0.9")
			wantKeys(t, "ingress map", rs.Maps[mapIngress], "10.42.0.9")
			// Pods of namespace a plus app=db pods of b (none); the finished and host-network
			// pods are never peers.
			wantRules(t, expand(rs, policyRulesFor(rs, egress, egressB)),
				`ip daddr @{10.42.0.5-10.42.0.6, 10.42.1.5} meta l4proto tcp ip daddr . th dport @{10.42.1.5 . 5432} accept comment "b/eg"`,
				`meta l4proto udp th dport 53 accept comment "b/eg"`)
		}},
		{name: "policyTypes Egress alone leaves ingress open", in: world(egressOnly), check: func(t *testing.T, rs Ruleset) {
			wantKeys(t, "egress map", rs.Maps[mapEgress], "10.42.0.9")
			wantKeys(t, "ingress map", rs.Maps[mapIngress])
		}},
		{name: "pod and namespace selector together", in: world(both), check: func(t *testing.T, rs Ruleset) {
			wantRules(t, expand(rs, policyRulesFor(rs, ingress, both)), `ip saddr @{10.42.0.9, 10.42.1.9} accept comment "a/both"`)
		}},
		{name: "SCTP port, protocol without a port", in: world(sctp), check: func(t *testing.T, rs Ruleset) {
			wantRules(t, policyRulesFor(rs, ingress, sctp),
				`meta l4proto sctp th dport 7 accept comment "a/sctp"`, `meta l4proto udp accept comment "a/sctp"`)
		}},
		{name: "egress named port to any peer: every pod with that port, sidecars included", in: world(egressNamedAny), check: func(t *testing.T, rs Ruleset) {
			wantRules(t, expand(rs, policyRulesFor(rs, egress, egressNamedAny)),
				`meta l4proto tcp ip daddr . th dport @{10.42.1.9 . 9100} accept comment "b/named-any"`)
		}},
		{name: "a policy selecting no local pod has no chain", in: world(MakePolicy("a", "db").Select("app", "db").Obj()), check: func(t *testing.T, rs Ruleset) {
			if len(rs.Chains) != 2 {
				t.Errorf("chains %v", keys(rs.Chains))
			}
		}},
		{name: "logging adds a rate-limited log before each drop", in: func() Input { in := world(denyA); in.LogDrops = true; return in }(), check: func(t *testing.T, rs Ruleset) {
			sel := strings.TrimPrefix(rs.Maps[mapIngress]["10.42.0.5"], "jump ")
			if r := rs.Chains[sel]; len(r) != 3 || !strings.Contains(r[1], `log prefix "skiff-netpol ingress drop: "`) {
				t.Errorf("selection chain %q", r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := Build(tc.in)
			tc.check(t, rs)
			// Deterministic: the same input gives the same ruleset, in any order of the input.
			rev := tc.in
			rev.Pods = slices.Clone(rev.Pods)
			slices.Reverse(rev.Pods)
			rev.Policies = slices.Clone(rev.Policies)
			slices.Reverse(rev.Policies)
			if s1, _ := Plan("t", nil, rs); s1 != func() string { s, _ := Plan("t", nil, Build(rev)); return s }() {
				t.Errorf("Build depends on the order of its input")
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func keys[V any](m map[string]V) []string { return sortedKeys(m) }

func wantKeys(t *testing.T, what string, m map[string]string, want ...string) {
	t.Helper()
	if got := sortedKeys(m); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s: keys %q, want %q", what, got, want)
	}
}

func wantRules(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n got %q\nwant %q", got, want)
	}
}

// expand writes every set a rule names (@s-...) as its sorted elements, @{a, b}: sets are named
// by their content, so tests read the content.
func expand(rs Ruleset, rules []string) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = setRef.ReplaceAllStringFunc(r, func(m string) string {
			set, ok := rs.Sets[strings.TrimPrefix(m, "@")]
			if !ok {
				return m + "(missing)"
			}
			return "@{" + strings.Join(slices.Sorted(slices.Values(set.Elements)), ", ") + "}"
		})
	}
	return out
}

var setRef = regexp.MustCompile(`@s-[0-9a-f]+`)

func TestIntervals(t *testing.T) {
	tests := []struct {
		block *networkingv1.IPBlock
		want  []string
	}{
		{&networkingv1.IPBlock{CIDR: "10.0.0.0/8"}, []string{"10.0.0.0/8"}},
		{&networkingv1.IPBlock{CIDR: "0.0.0.0/0"}, []string{"0.0.0.0/0"}},
		{&networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}}, []string{"0.0.0.0-9.255.255.255", "11.0.0.0-255.255.255.255"}},
		{&networkingv1.IPBlock{CIDR: "10.0.0.0/24", Except: []string{"10.0.0.0/25"}}, []string{"10.0.0.128/25"}},
		{&networkingv1.IPBlock{CIDR: "10.0.0.0/24", Except: []string{"10.0.0.0/24"}}, []string{}},
		{&networkingv1.IPBlock{CIDR: "10.0.0.7/32"}, []string{"10.0.0.7"}},
		{&networkingv1.IPBlock{CIDR: "10.0.0.5/24"}, []string{"10.0.0.0/24"}},
		{&networkingv1.IPBlock{CIDR: "fd00::/8"}, []string{}},
		{&networkingv1.IPBlock{CIDR: "10.0.0.0/24", Except: []string{"10.0.0.1/32", "10.0.0.2/32", "fd00::/8"}}, []string{"10.0.0.0", "10.0.0.3-10.0.0.255"}},
	}
	for _, tc := range tests {
		got := intervalElements(mergeRanges(ipBlockRanges(tc.block)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s except %v: %q, want %q", tc.block.CIDR, tc.block.Except, got, tc.want)
		}
	}
	// Touching and overlapping ranges merge.
	rs := mergeRanges(append(ipBlockRanges(&networkingv1.IPBlock{CIDR: "10.0.0.0/25"}),
		append(ipBlockRanges(&networkingv1.IPBlock{CIDR: "10.0.0.128/25"}), ipBlockRanges(&networkingv1.IPBlock{CIDR: "10.0.0.4/30"})...)...))
	if got := intervalElements(rs); !slices.Equal(got, []string{"10.0.0.0/24"}) {
		t.Errorf("merged %q", got)
	}
}

// TestPlanTouchesOnlyWhatChanged: a pod's label, a namespace's label or one policy's edit
// rewrites only what it touches, never the whole table.
func TestPlanTouchesOnlyWhatChanged(t *testing.T) {
	web := MakePolicy("a", "web").Select("app", "web").Ingress([]networkingv1.NetworkPolicyPeer{podPeer("app", "db"), nsPeer("team", "y")}).Obj()
	other := MakePolicy("b", "other").Ingress(nil, tcp(80)).Obj()
	base := world(web, other)
	prev := Build(base)

	relabelled := world(web, other)
	relabelled.Pods = slices.Clone(relabelled.Pods)
	relabelled.Pods[2] = MakePod("a", "db").Node("n2").IP("10.42.1.5").Label("app", "gone").Obj()
	webEdited := world(MakePolicy("a", "web").Select("app", "web").Ingress([]networkingv1.NetworkPolicyPeer{podPeer("app", "cli")}, tcp(81)).Obj(), other)
	webChain := policyChain(ingress, web)
	// Sets are named by their content: a change of addresses is a new set, the rewrite of the
	// chain naming it, and the old set's deletion; nothing else.
	touchesWeb := []string{"add set ip t s-", "add element ip t s-", "flush chain ip t " + webChain + "\n",
		"add rule ip t " + webChain + " ", "delete set ip t s-"}
	tests := []struct {
		name string
		in   Input
		want []string // every line of the plan starts with one of these
	}{
		{"a remote pod relabelled", relabelled, touchesWeb},
		{"a namespace relabelled", func() Input {
			in := world(web, other)
			in.Namespaces = []*corev1.Namespace{ns("a", nil), ns("b", map[string]string{"team": "y"})}
			return in
		}(), touchesWeb},
		{"one policy edited", webEdited, touchesWeb},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script, changed := Plan("t", &prev, Build(tc.in))
			if !changed {
				t.Fatal("nothing planned")
			}
			for _, line := range strings.SplitAfter(strings.TrimSuffix(script, "\n"), "\n") {
				if !slices.ContainsFunc(tc.want, func(p string) bool { return strings.HasPrefix(line, p) || line+"\n" == p }) {
					t.Errorf("unexpected command %q in\n%s", line, script)
				}
			}
			if !strings.Contains(script, "flush chain ip t "+webChain+"\n") {
				t.Errorf("the web policy's chain is not rewritten:\n%s", script)
			}
		})
	}
}
