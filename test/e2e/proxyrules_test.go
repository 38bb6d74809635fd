package e2e

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/proxy"
)

// The service proxy's rules as the host shows them, in either of its modes (--proxy-mode):
// iptables chains named <prefix>-* (iptables-save) or the nftables table ip skiff-<prefix> (nft
// list table). Tests wait for a VIP's rules with these before they send anything to it.

// proxyRules are the lines of the node's own rules on this host: its iptables chains' rules and
// every line of its nftables table.
func proxyRules(t *testing.T, prefix string) []string {
	t.Helper()
	return proxyRulesWith(exec.Command, prefix)
}

// proxyRulesWith is proxyRules with the commands run by command (e.g. a netHost's, in its
// network namespace).
func proxyRulesWith(command func(string, ...string) *exec.Cmd, prefix string) []string {
	var out []string
	for _, table := range []string{"nat", "filter"} {
		save, _ := command("iptables-save", "-t", table).Output()
		for _, l := range strings.Split(string(save), "\n") {
			if strings.HasPrefix(l, "-A "+prefix+"-") {
				out = append(out, l)
			}
		}
	}
	if nft, err := command("nft", "list", "table", "ip", proxy.NftTable(prefix)).Output(); err == nil {
		for _, l := range strings.Split(string(nft), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// ruleLines are the lines holding every one of what (case-insensitive: iptables writes REJECT,
// nft reject); an IP address in what matches only whole (10.96.0.5 not in 10.96.0.56).
func ruleLines(lines []string, what ...string) []string {
	var out []string
	for _, l := range lines {
		ll, all := strings.ToLower(l), true
		for _, w := range what {
			if net.ParseIP(w) != nil {
				all = all && regexp.MustCompile(`(^|[^0-9.])`+regexp.QuoteMeta(w)+`($|[^0-9])`).MatchString(ll)
				continue
			}
			all = all && strings.Contains(ll, strings.ToLower(w))
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// endpointLines are the lines that translate to ip:port (ip "" for any address): "--to-destination
// ip:port" in iptables, "dnat to ip:port" or a numgen map's "ip . port" in nftables.
func endpointLines(lines []string, ip, port string) []string {
	re := regexp.MustCompile(`(^|[ ,{])` + regexp.QuoteMeta(ip) + `(:| \. )` + regexp.QuoteMeta(port) + `\b`)
	if ip == "" {
		re = regexp.MustCompile(`[0-9](:| \. )` + regexp.QuoteMeta(port) + `\b`)
	}
	var out []string
	for _, l := range lines {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// hostHasVIPRule reports whether a host's rules (iptables-save of nat and nft list ruleset
// output, in any mode, of any node) translate addr: "-d addr/32" in iptables' nat table, an
// "addr . proto . port : goto <chain>" element in nftables that is not the reject map's.
func hostHasVIPRule(rules, addr string) bool {
	if strings.Contains(rules, "-d "+addr+"/32") {
		return true
	}
	for _, l := range strings.Split(rules, "\n") {
		if strings.Contains(l, addr+" . ") && strings.Contains(l, ": goto ") && !strings.Contains(l, "reject") {
			return true
		}
	}
	return false
}

// hostHasEndpointRule reports whether a host's rules DNAT to ip:port in either mode.
func hostHasEndpointRule(rules, ip, port string) bool {
	return len(endpointLines(strings.Split(rules, "\n"), ip, port)) > 0
}

// hostRules is iptables-save of the nat table and nft list ruleset, run by command.
func hostRules(command func(string, ...string) *exec.Cmd) (string, error) {
	save, err := command("iptables-save", "-t", "nat").CombinedOutput()
	if err != nil {
		return string(save), err
	}
	nft, _ := command("nft", "list", "ruleset").Output()
	return string(save) + string(nft), nil
}

// preroutingHooks counts the node's nat prerouting entry points in both modes: iptables' jump
// from PREROUTING and the nftables table's base chain.
func preroutingHooks(t *testing.T, prefix string) int {
	t.Helper()
	save, _ := exec.Command("iptables-save", "-t", "nat").Output()
	n := strings.Count(string(save), "-A PREROUTING -j "+prefix+"-SERVICES\n")
	return n + len(ruleLines(proxyRules(t, prefix), "type nat hook prerouting"))
}

// waitSourceRangeRule waits until the node's rules let cidr (a loadBalancerSourceRanges entry)
// through: "-s cidr" in iptables, "ip saddr cidr" in nftables (which prints a /32 as the address).
func waitSourceRangeRule(t *testing.T, prefix, cidr string) {
	t.Helper()
	nft := "ip saddr " + strings.TrimSuffix(cidr, "/32") + " "
	eventually(t, 60*time.Second, func() error {
		rules := proxyRules(t, prefix)
		if len(ruleLines(rules, "-s "+cidr+" ")) == 0 && len(ruleLines(rules, nft)) == 0 {
			return fmt.Errorf("no rule of %s letting %s through yet", prefix, cidr)
		}
		return nil
	})
}
