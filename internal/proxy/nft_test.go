package proxy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// followNft interprets the subset of nft the nftables backend writes, as follow does for
// iptables: every numgen branch is taken, affinity sets are empty (a first connection), and every
// connection is new.
func followNft(t *testing.T, rs NftRuleset, chain string, p packet, out *outcome) (terminal bool) {
	t.Helper()
	rules, ok := rs.Chains[chain]
	if !ok {
		t.Fatalf("jump to missing chain %s", chain)
	}
	// verdict applies a verdict-map value; it reports whether the chain ends (and as what).
	verdict := func(v string) (ends, terminal bool) {
		f := strings.Fields(v)
		switch f[0] {
		case "drop":
			out.verdict = "DROP"
			return true, true
		case "goto":
			return true, followNft(t, rs, f[1], p, out)
		case "jump":
			if followNft(t, rs, f[1], p, out) {
				return true, true
			}
			return false, false
		}
		t.Fatalf("verdict %q", v)
		return false, false
	}
	// lookup applies the verdict of key in map m (no element: the chain goes on).
	lookup := func(m, key string) (ends, terminal bool) {
		v, ok := rs.Maps[strings.TrimPrefix(m, "@")][key]
		if !ok {
			return false, false
		}
		return verdict(v)
	}
	addrOf := func(field string) string {
		if field == "saddr" {
			return p.src
		}
		return p.dst
	}
	for _, r := range rules {
		f := strings.Fields(r)
		match := true
	rule:
		for i := 0; i < len(f) && match; i++ {
			switch f[i] {
			case "comment", "masquerade":
				break rule
			case "ip":
				if i+2 < len(f) && f[i+2] == "." { // ip daddr . meta l4proto . th dport (vmap @M | @S)
					key := p.dst + " . " + p.proto + " . " + strconv.Itoa(p.port)
					i += 8
					if f[i] == "vmap" {
						if ends, term := lookup(f[i+1], key); ends {
							return term
						}
						match = false // no element, or a verdict that does not end the chain
						break
					}
					_, match = rs.Maps[strings.TrimPrefix(f[i], "@")][key]
					continue
				}
				addr, j, neg := addrOf(f[i+1]), i+2, false
				if f[j] == "!=" {
					neg, j = true, j+1
				}
				if strings.HasPrefix(f[j], "@") {
					match = false // affinity sets: empty
				} else if strings.Contains(f[j], "/") {
					match = inPrefix(addr, f[j]) != neg
				} else {
					match = (addr == f[j]) != neg
				}
				i = j
			case "meta":
				switch {
				case f[i+1] == "mark":
					if f[i+5] == "|" {
						out.masq = true
					}
					break rule
				case f[i+2] == ".": // meta l4proto . th dport vmap @M
					if ends, term := lookup(f[i+6], p.proto+" . "+strconv.Itoa(p.port)); ends {
						return term
					}
					match = false
				default:
					match = f[i+2] == p.proto
					i += 2
				}
			case "th":
				match = f[i+2] == strconv.Itoa(p.port)
				i += 2
			case "fib":
				match = slices.Contains(local, addrOf(f[i+1]))
				i += 3
			case "ct":
				// Every connection is new and not yet translated: "ct state new" and the bit tests
				// "ct state & (established | related) == 0", "ct status & dnat == 0" match.
				if f[i+2] == "new" {
					i += 2
					break
				}
				for f[i] != "==" {
					i++
				}
				i++
			case "update":
				for f[i] != "}" {
					i++
				}
			case "numgen":
				var targets []string
				for j := i; j < len(f); j++ {
					if f[j] == "goto" {
						targets = append(targets, strings.TrimSuffix(f[j+1], ","))
					}
				}
				term := true
				for _, c := range targets {
					term = followNft(t, rs, c, p, out) && term
				}
				return term
			case "jump":
				if followNft(t, rs, f[i+1], p, out) {
					return true
				}
				break rule
			case "goto":
				return followNft(t, rs, f[i+1], p, out)
			case "drop":
				out.verdict = "DROP"
				return true
			case "reject":
				out.verdict = "REJECT"
				return true
			case "dnat":
				if f[i+1] == "to" { // dnat to ip:port
					out.targets = append(out.targets, f[i+2])
					return true
				}
				// dnat ip to numgen random mod N map { 0 : ip . port, ... }: every branch.
				for j := i; j+2 < len(f); j++ {
					if f[j] == ":" {
						out.targets = append(out.targets, f[j+1]+":"+strings.TrimSuffix(f[j+3], ","))
					}
				}
				return true
			case "return":
				return false
			default:
				t.Fatalf("rule %q: unknown token %q", r, f[i])
			}
		}
	}
	return false
}

// runNft is run for the nftables backend: nat (services), then, untranslated, the filter chains.
func runNft(t *testing.T, rs NftRuleset, p packet) outcome {
	t.Helper()
	var out outcome
	followNft(t, rs, nftServices, p, &out)
	// Postrouting masquerades a translated connection whose source is its endpoint (hairpin).
	for _, target := range out.targets {
		ip, _, _ := strings.Cut(target, ":")
		if _, ok := rs.Maps[nftHairpin][p.src+" . "+ip]; ok && ip == p.src {
			out.masq = true
		}
	}
	slices.Sort(out.targets)
	out.targets = slices.Compact(out.targets)
	if len(out.targets) == 0 {
		out.masq = false
		var f outcome
		_ = followNft(t, rs, nftSvcFilter, p, &f) ||
			followNft(t, rs, nftExtFilter, p, &f) ||
			followNft(t, rs, nftLBFirewall, p, &f)
		out.verdict = f.verdict
	}
	return out
}

// runMode builds the rules of mode and follows p through them.
func runMode(t *testing.T, mode string, cfg Config, svcs []*corev1.Service, eps []*discoveryv1.EndpointSlice, p packet) outcome {
	t.Helper()
	if mode == ModeNftables {
		return runNft(t, BuildNft(cfg, svcs, eps), p)
	}
	return run(t, cfg, Build(cfg, svcs, eps), p)
}

var modes = []string{ModeIPTables, ModeNftables}

func TestBuildNftSpreadsEvenlyWithAffinity(t *testing.T) {
	cfg := testConfig()
	rs := BuildNft(cfg, []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).affinity().obj()},
		[]*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.1", "a"), readyEp("10.244.1.2", "a"), readyEp("10.244.1.3", "a"))})
	svc := rs.Maps[nftServiceIPs]["10.96.0.10 . tcp . 80"]
	rules := rs.Chains[strings.TrimPrefix(svc, "goto ")]
	last := rules[len(rules)-1]
	if !strings.HasPrefix(last, "numgen random mod 3 vmap { 0 : goto sep-") || strings.Count(last, "goto") != 3 {
		t.Errorf("service chain's last rule %q: want one numgen pick among 3", last)
	}
	checks, updates := 0, 0
	for _, r := range rules {
		if strings.HasPrefix(r, "ip saddr @sep-") && strings.Contains(r, "-aff10800 goto sep-") {
			checks++
		}
	}
	for name, set := range rs.Sets {
		if set != "type ipv4_addr; flags dynamic,timeout; timeout 10800s;" {
			t.Errorf("set %s = %q", name, set)
		}
		sep, _, _ := strings.Cut(name, "-aff")
		if slices.Contains(rs.Chains[sep], "update @"+name+" { ip saddr }") {
			updates++
		}
	}
	if checks != 3 || updates != 3 || len(rs.Sets) != 3 {
		t.Errorf("ClientIP affinity: %d checks, %d updates, %d sets; want 3 each:\n%v\n%v", checks, updates, len(rs.Sets), rules, rs.Sets)
	}
}

// TestBuildNftOneChainPerService: without affinity a service's endpoints are one numgen map in
// its chain (no endpoint chains), and every endpoint is in the hairpin set.
func TestBuildNftOneChainPerService(t *testing.T) {
	rs := BuildNft(testConfig(), []*corev1.Service{makeSvc("web", "10.96.0.10").port("http", 80, tcp).obj()},
		[]*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.1", "a"), readyEp("10.244.1.2", "a"), readyEp("10.244.1.3", "a"))})
	svc := strings.TrimPrefix(rs.Maps[nftServiceIPs]["10.96.0.10 . tcp . 80"], "goto ")
	want := "meta l4proto tcp dnat ip to numgen random mod 3 map { 0 : 10.244.1.1 . 8080, 1 : 10.244.1.2 . 8080, 2 : 10.244.1.3 . 8080 }"
	if rules := rs.Chains[svc]; len(rules) != 2 || rules[1] != want {
		t.Errorf("service chain %q, want its last rule %q", rules, want)
	}
	for name := range rs.Chains {
		if strings.HasPrefix(name, "sep-") {
			t.Errorf("endpoint chain %s without affinity", name)
		}
	}
	if len(rs.Maps[nftHairpin]) != 3 {
		t.Errorf("hairpin set %v, want the 3 endpoints", rs.Maps[nftHairpin])
	}
}
