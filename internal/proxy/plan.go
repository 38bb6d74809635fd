package proxy

import (
	"bufio"
	"slices"
	"strings"
)

// Hook is a rule in a built-in chain that jumps into one of the proxy's chains.
type Hook struct {
	Table, Chain string
	Rule         string
}

// Hooks are the jumps from the built-in chains, inserted first in each: cluster IPs, external
// IPs and NodePorts are translated in nat PREROUTING (pods, other hosts) and OUTPUT (the node
// itself); marked connections are masqueraded in POSTROUTING; new connections to a service
// without endpoints, and to the service range with no rule, are rejected in filter FORWARD and
// OUTPUT (cluster IPs) and INPUT (NodePorts); new connections to a load-balancer IP from outside
// its loadBalancerSourceRanges are dropped in INPUT, OUTPUT and FORWARD; forwarded packets
// conntrack calls INVALID are dropped in FORWARD (unless Config.ConntrackTCPLiberal).
func (c Config) Hooks() []Hook {
	newConn := "-m conntrack --ctstate NEW "
	return []Hook{
		{"nat", "PREROUTING", "-j " + c.servicesChain()},
		{"nat", "OUTPUT", "-j " + c.servicesChain()},
		{"nat", "POSTROUTING", "-j " + c.postroutingChain()},
		{"filter", "FORWARD", newConn + "-j " + c.filterChain()},
		{"filter", "OUTPUT", newConn + "-j " + c.filterChain()},
		{"filter", "FORWARD", newConn + "-j " + c.extFilterChain()},
		{"filter", "INPUT", newConn + "-j " + c.extFilterChain()},
		{"filter", "INPUT", "-j " + c.firewallChain()},
		{"filter", "INPUT", newConn + "-j " + c.lbFirewallChain()},
		{"filter", "OUTPUT", newConn + "-j " + c.lbFirewallChain()},
		{"filter", "FORWARD", newConn + "-j " + c.lbFirewallChain()},
		{"filter", "FORWARD", "-j " + c.forwardChain()},
	}
}

// Plan is the iptables-restore --noflush input that turns prev into next: changed and new
// chains are declared (which flushes them) and rewritten, chains no longer wanted are flushed and
// deleted, and unchanged chains are not mentioned at all. A nil prev rewrites everything. The
// second result is false when there is nothing to do.
func Plan(prev *Ruleset, next Ruleset) (string, bool) {
	var b strings.Builder
	changed := false
	for _, t := range []struct {
		name       string
		prev, next map[string][]string
	}{{"nat", tableOf(prev, true), next.NAT}, {"filter", tableOf(prev, false), next.Filter}} {
		var write, remove []string
		for name, rules := range t.next {
			if old, ok := t.prev[name]; prev == nil || !ok || !slices.Equal(old, rules) {
				write = append(write, name)
			}
		}
		for name := range t.prev {
			if _, ok := t.next[name]; !ok {
				remove = append(remove, name)
			}
		}
		if len(write) == 0 && len(remove) == 0 {
			continue
		}
		changed = true
		slices.Sort(write)
		slices.Sort(remove)
		b.WriteString("*" + t.name + "\n")
		for _, name := range write {
			b.WriteString(":" + name + " - [0:0]\n")
		}
		for _, name := range remove {
			b.WriteString(":" + name + " - [0:0]\n")
		}
		for _, name := range write {
			for _, r := range t.next[name] {
				b.WriteString("-A " + name + " " + r + "\n")
			}
		}
		for _, name := range remove {
			b.WriteString("-X " + name + "\n")
		}
		b.WriteString("COMMIT\n")
	}
	return b.String(), changed
}

func tableOf(rs *Ruleset, nat bool) map[string][]string {
	if rs == nil {
		return nil
	}
	if nat {
		return rs.NAT
	}
	return rs.Filter
}

// Owned is what iptables-save shows of one prefix: its chains and the built-in chains' rules
// that jump to them, per table.
type Owned struct {
	Chains map[string][]string // table -> chain names
	Hooks  map[string][]string // table -> "-A CHAIN ..." lines as saved
}

// ParseSave finds prefix's chains and hooks in iptables-save output.
func ParseSave(save, prefix string) Owned {
	o := Owned{Chains: map[string][]string{}, Hooks: map[string][]string{}}
	table := ""
	sc := bufio.NewScanner(strings.NewReader(save))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	own := prefix + "-"
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"+own):
			name, _, _ := strings.Cut(line[1:], " ")
			o.Chains[table] = append(o.Chains[table], name)
		case strings.HasPrefix(line, "-A "):
			chain, rest, _ := strings.Cut(line[3:], " ")
			if !strings.HasPrefix(chain, own) && (strings.Contains(" "+rest+" ", " -j "+own) || strings.Contains(" "+rest+" ", " -g "+own)) {
				o.Hooks[table] = append(o.Hooks[table], line)
			}
		}
	}
	return o
}

// Empty reports whether nothing of the prefix is installed.
func (o Owned) Empty() bool {
	for _, c := range o.Chains {
		if len(c) > 0 {
			return false
		}
	}
	for _, h := range o.Hooks {
		if len(h) > 0 {
			return false
		}
	}
	return true
}

// CleanupPlan is the iptables-restore --noflush input that removes everything in o: hooks first,
// then the chains (flushed, then deleted).
func CleanupPlan(o Owned) string {
	var b strings.Builder
	tables := map[string]bool{}
	for t := range o.Chains {
		tables[t] = true
	}
	for t := range o.Hooks {
		tables[t] = true
	}
	names := make([]string, 0, len(tables))
	for t := range tables {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		if len(o.Chains[t]) == 0 && len(o.Hooks[t]) == 0 {
			continue
		}
		b.WriteString("*" + t + "\n")
		for _, c := range o.Chains[t] {
			b.WriteString(":" + c + " - [0:0]\n")
		}
		for _, h := range o.Hooks[t] {
			b.WriteString("-D " + strings.TrimPrefix(h, "-A ") + "\n")
		}
		for _, c := range o.Chains[t] {
			b.WriteString("-X " + c + "\n")
		}
		b.WriteString("COMMIT\n")
	}
	return b.String()
}

// RulesetFromOwned is what a previous run left: its chains with unknown content (so the first
// sync rewrites those still wanted and deletes the rest).
func RulesetFromOwned(o Owned) *Ruleset {
	rs := &Ruleset{NAT: map[string][]string{}, Filter: map[string][]string{}}
	for _, c := range o.Chains["nat"] {
		rs.NAT[c] = []string{"(unknown)"}
	}
	for _, c := range o.Chains["filter"] {
		rs.Filter[c] = []string{"(unknown)"}
	}
	return rs
}
