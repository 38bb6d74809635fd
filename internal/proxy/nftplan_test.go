package proxy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// lineIndex is the index of the first line of script that starts with prefix, -1 if none.
func lineIndex(script, prefix string) int {
	for i, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

func TestPlanNft(t *testing.T) {
	cfg := testConfig()
	const table = "skiff-test"
	svcs := []*corev1.Service{
		makeSvc("a", "10.96.0.10").port("http", 80, tcp).obj(),
		makeSvc("b", "10.96.0.11").port("http", 80, tcp).affinity().obj(),
	}
	slices := []*discoveryv1.EndpointSlice{
		makeSlice("a", "http", 8080, tcp, readyEp("10.244.1.1", "node-a")),
		makeSlice("b", "http", 8080, tcp, readyEp("10.244.1.2", "node-a")),
	}
	first := BuildNft(cfg, svcs, slices)
	svcB := strings.TrimPrefix(first.Maps[nftServiceIPs]["10.96.0.11 . tcp . 80"], "goto ")
	sepB := strings.TrimPrefix(first.Chains[svcB][len(first.Chains[svcB])-1], "goto ")
	setB := sepB + "-aff10800"

	full, changed := PlanNft(table, nil, first)
	for _, want := range []string{
		"add table ip skiff-test\ndelete table ip skiff-test\nadd table ip skiff-test\n",
		"add chain ip skiff-test nat-prerouting { type nat hook prerouting priority dstnat; policy accept; }\n",
		"add map ip skiff-test service-ips { type ipv4_addr . inet_proto . inet_service : verdict; }\n",
		"add set ip skiff-test firewall-ips { type ipv4_addr . inet_proto . inet_service; }\n",
		"add set ip skiff-test " + setB + " { type ipv4_addr; flags dynamic,timeout; timeout 10800s; }\n",
		"dnat to 10.244.1.1:8080\n",
		"add element ip skiff-test service-ips { 10.96.0.10 . tcp . 80 : goto svc-",
	} {
		if !changed || !strings.Contains(full, want) {
			t.Errorf("full sync lacks %q:\n%s", want, full)
		}
	}
	// Declarations before use: sets and maps, then chains, then rules, then elements.
	if !(lineIndex(full, "add set ip skiff-test "+setB) < lineIndex(full, "add chain") &&
		lineIndex(full, "add chain ip skiff-test "+sepB) < lineIndex(full, "add rule") &&
		lineIndex(full, "add rule") < lineIndex(full, "add element")) {
		t.Errorf("full sync out of order:\n%s", full)
	}
	if script, changed := PlanNft(table, &first, BuildNft(cfg, svcs, slices)); changed || script != "" {
		t.Errorf("an unchanged ruleset planned changes:\n%s", script)
	}

	// b's endpoint moves: its service chain is rewritten, a new endpoint chain and affinity set
	// are added, the old ones deleted after the rewrite, the hairpin set follows; a's chains and
	// the service map are not mentioned.
	slices[1] = makeSlice("b", "http", 8080, tcp, readyEp("10.244.1.3", "node-a"))
	second := BuildNft(cfg, svcs, slices)
	plan, _ := PlanNft(table, &first, second)
	if strings.Contains(plan, "10.244.1.1") || strings.Contains(plan, "table ip skiff-test\n") || strings.Contains(plan, "service-ips") {
		t.Errorf("more than b's chains rewritten:\n%s", plan)
	}
	flush, del, delSet := lineIndex(plan, "flush chain ip skiff-test "+svcB), lineIndex(plan, "delete chain ip skiff-test "+sepB), lineIndex(plan, "delete set ip skiff-test "+setB)
	if flush < 0 || del < flush || delSet < del || !strings.Contains(plan, "dnat to 10.244.1.3:8080") {
		t.Errorf("want b's service chain flushed and rewritten, then the old endpoint chain and set deleted:\n%s", plan)
	}
	if !strings.Contains(plan, "delete element ip skiff-test hairpin-endpoints { 10.244.1.2 . 10.244.1.2 }\nadd element ip skiff-test hairpin-endpoints { 10.244.1.3 . 10.244.1.3 }\n") {
		t.Errorf("hairpin set not updated:\n%s", plan)
	}

	// Service b goes: its element is deleted before its chains and set.
	third := BuildNft(cfg, svcs[:1], slices[:1])
	plan, _ = PlanNft(table, &second, third)
	elem := lineIndex(plan, "delete element ip skiff-test service-ips { 10.96.0.11 . tcp . 80 }")
	for name := range second.Chains {
		if _, kept := third.Chains[name]; !kept {
			if i := lineIndex(plan, "delete chain ip skiff-test "+name); i < 0 || i < elem || elem < 0 {
				t.Errorf("chain %s of the deleted service not deleted after its element:\n%s", name, plan)
			}
		}
	}
	if len(third.Sets) != 0 || !strings.Contains(plan, "delete set ip skiff-test ") {
		t.Errorf("affinity set of the deleted service not deleted:\n%s", plan)
	}

	// A service losing its endpoints moves from service-ips to the reject map.
	slices[0] = makeSlice("a", "http", 8080, tcp)
	plan, _ = PlanNft(table, &third, BuildNft(cfg, svcs[:1], slices[:1]))
	if !strings.Contains(plan, "delete element ip skiff-test service-ips { 10.96.0.10 . tcp . 80 }") ||
		!strings.Contains(plan, "add element ip skiff-test no-endpoint-services { 10.96.0.10 . tcp . 80 : goto reject-service }") {
		t.Errorf("no reject for a service without endpoints:\n%s", plan)
	}
}
