package proxy

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The nftables backend: the same behaviour as Build's iptables chains, in one table of the node's
// own (NftTable) with its own base chains at the standard priorities, so nothing in the iptables
// tables (or any other table) changes. As kube-proxy's nftables mode, cluster, external and
// load-balancer IPs are one verdict-map lookup keyed by address . protocol . port (service-ips),
// NodePorts another (service-nodeports), a service chain picks an endpoint chain with numgen, and
// ClientIP affinity is a dynamic set with a timeout per endpoint.

// NftRuleset is the desired content of the node's table: its chains (base chains included, see
// nftBaseChains), the elements of its fixed maps and sets (nftMaps; value "" for a set), and the
// affinity sets (name -> declaration).
type NftRuleset struct {
	Chains map[string][]string
	Maps   map[string]map[string]string
	Sets   map[string]string
}

// NftTable is the node's table (family ip) for prefix.
func NftTable(prefix string) string { return "skiff-" + strings.ToLower(prefix) }

// Chains and maps of the table. Base chains hook into the kernel at the standard priorities.
const (
	nftServices     = "services"
	nftNodePorts    = "nodeports"
	nftMarkMasq     = "mark-for-masquerade"
	nftMasquerading = "masquerading"
	nftSvcFilter    = "service-filter"
	nftExtFilter    = "external-filter"
	nftLBFirewall   = "lb-firewall"
	nftLocalnet     = "localnet-firewall"
	nftReject       = "reject-service"

	nftServiceIPs      = "service-ips"
	nftServiceNodePort = "service-nodeports"
	nftNoEndpointIPs   = "no-endpoint-services"
	nftNoEndpointExt   = "no-endpoint-external"
	nftNoEndpointNP    = "no-endpoint-nodeports"
	nftFirewallIPs     = "firewall-ips"
	nftHairpin         = "hairpin-endpoints"
)

// nftBaseChains are the base chains' declarations.
var nftBaseChains = map[string]string{
	"nat-prerouting":  "type nat hook prerouting priority dstnat; policy accept;",
	"nat-output":      "type nat hook output priority -100; policy accept;",
	"nat-postrouting": "type nat hook postrouting priority srcnat; policy accept;",
	"filter-input":    "type filter hook input priority filter; policy accept;",
	"filter-forward":  "type filter hook forward priority filter; policy accept;",
	"filter-output":   "type filter hook output priority filter; policy accept;",
}

const nftAddrPortKey = "ipv4_addr . inet_proto . inet_service"

// nftMaps are the fixed maps' and sets' declarations.
var nftMaps = map[string]string{
	nftServiceIPs:      "type " + nftAddrPortKey + " : verdict;",
	nftServiceNodePort: "type inet_proto . inet_service : verdict;",
	nftNoEndpointIPs:   "type " + nftAddrPortKey + " : verdict;",
	nftNoEndpointExt:   "type " + nftAddrPortKey + " : verdict;",
	nftNoEndpointNP:    "type inet_proto . inet_service : verdict;",
	nftFirewallIPs:     "type " + nftAddrPortKey + ";",
	nftHairpin:         "type ipv4_addr . ipv4_addr;",
}

func nftIsSet(name string) bool { return !strings.HasSuffix(nftMaps[name], ": verdict;") }

// nftName is a chain name of kind for id (hash characters, lower-cased: nft names are
// case-sensitive but conventionally lower case).
func nftName(kind, id string) string { return kind + "-" + strings.ToLower(id) }

// BuildNft computes the whole desired content of the node's table. It is pure, and programs the
// same behaviour as Build.
func BuildNft(cfg Config, services []*corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) NftRuleset {
	rs := NftRuleset{Chains: map[string][]string{}, Maps: map[string]map[string]string{}, Sets: map[string]string{}}
	for name := range nftMaps {
		rs.Maps[name] = map[string]string{}
	}
	elem := rs.elem
	eachServicePort(cfg, services, endpointSlices, func(sb svcPortBuilder) {
		b := nftPortBuilder{svcPortBuilder: sb, rs: rs}
		proto := strings.ToLower(string(b.port.Protocol))
		key := func(a string, port int32) string { return fmt.Sprintf("%s . %s . %d", a, proto, port) }
		internal, external, extHasEndpoints := b.chains()
		noEndpoint := "goto " + nftReject
		if b.hasClusterEndpoints() {
			noEndpoint = "drop"
		}
		if internal != "" {
			elem(nftServiceIPs, key(b.svc.Spec.ClusterIP, b.port.Port), "goto "+internal)
		} else {
			elem(nftNoEndpointIPs, key(b.svc.Spec.ClusterIP, b.port.Port), noEndpoint)
		}
		for _, a := range ipv4s(b.svc.Spec.ExternalIPs) {
			if external != "" {
				elem(nftServiceIPs, key(a.String(), b.port.Port), "goto "+external)
			}
			if !extHasEndpoints {
				elem(nftNoEndpointExt, key(a.String(), b.port.Port), noEndpoint)
			}
		}
		lbIPs := ipv4s(lbIngressIPs(b.svc))
		lbTarget := external
		if ranges := sourceRanges(b.svc); external != "" && len(lbIPs) > 0 && len(ranges) > 0 {
			lbTarget = b.firewall(external, ranges, lbIPs)
			for _, a := range lbIPs {
				elem(nftFirewallIPs, key(a.String(), b.port.Port), "")
			}
		}
		for _, a := range lbIPs {
			if external != "" {
				elem(nftServiceIPs, key(a.String(), b.port.Port), "goto "+lbTarget)
			}
			if !extHasEndpoints {
				elem(nftNoEndpointExt, key(a.String(), b.port.Port), noEndpoint)
			}
		}
		if np := b.nodePort(); np != 0 {
			k := fmt.Sprintf("%s . %d", proto, np)
			if external != "" {
				elem(nftServiceNodePort, k, "goto "+external)
			}
			if !extHasEndpoints {
				elem(nftNoEndpointNP, k, noEndpoint)
			}
		}
	})

	dispatch := "ip daddr . meta l4proto . th dport vmap @"
	svcRules := []string{dispatch + nftServiceIPs}
	// NodePorts last, as kube-proxy: on the node's addresses (and loopback), or every local one.
	if len(cfg.NodePortAddresses) == 0 {
		svcRules = append(svcRules, "fib daddr type local jump "+nftNodePorts)
	} else {
		for _, a := range cfg.NodePortAddresses {
			svcRules = append(svcRules, fmt.Sprintf("ip daddr %s jump %s", a, nftNodePorts))
		}
	}
	mark := cfg.mark()
	filter := []string{dispatch + nftNoEndpointIPs}
	// Whatever reaches the service range untranslated is refused instead of leaving by the
	// default route.
	for _, r := range cfg.serviceRanges() {
		filter = append(filter, fmt.Sprintf(`ip daddr %s reject with icmp type port-unreachable comment "service range without rules"`, r))
	}
	newConn := "ct state new jump "
	forward := []string{newConn + nftSvcFilter, newConn + nftExtFilter, newConn + nftLBFirewall}
	if !cfg.ConntrackTCPLiberal {
		// See Config.ConntrackTCPLiberal.
		forward = append([]string{`ct state invalid drop comment "conntrack INVALID, kubernetes#74839"`}, forward...)
	}
	for name, rules := range map[string][]string{
		"nat-prerouting":  {"jump " + nftServices},
		"nat-output":      {"jump " + nftServices},
		"nat-postrouting": {"jump " + nftMasquerading},
		"filter-input":    {newConn + nftExtFilter, "jump " + nftLocalnet, newConn + nftLBFirewall},
		"filter-forward":  forward,
		"filter-output":   {newConn + nftSvcFilter, newConn + nftLBFirewall},
		nftServices:       svcRules,
		nftNodePorts:      {"meta l4proto . th dport vmap @" + nftServiceNodePort},
		nftMarkMasq:       {"meta mark set meta mark | " + mark},
		nftMasquerading: {
			"ct status dnat ip saddr . ip daddr @" + nftHairpin + ` masquerade fully-random comment "a pod reaching itself through a service"`,
			fmt.Sprintf("meta mark & %s == 0 return", mark),
			"meta mark set meta mark ^ " + mark,
			"masquerade fully-random",
		},
		nftSvcFilter: filter,
		nftExtFilter: {
			dispatch + nftNoEndpointExt,
			"fib daddr type local meta l4proto . th dport vmap @" + nftNoEndpointNP,
		},
		nftLBFirewall: {"ip daddr . meta l4proto . th dport @" + nftFirewallIPs + ` drop comment "not in loadBalancerSourceRanges"`},
		// route_localnet lets 127.0.0.1 NodePorts be DNATed; like kube-proxy, refuse other hosts'
		// packets to 127/8 that this opens. Bit tests: "ct state != established,related" would
		// compare the whole value and drop the replies of 127.0.0.1 NodePort connections.
		nftLocalnet: {`ip saddr != 127.0.0.0/8 ip daddr 127.0.0.0/8 ct state & (established | related) == 0 ct status & dnat == 0 drop comment "block incoming localnet connections"`},
		nftReject:   {"reject with icmp type port-unreachable"},
	} {
		rs.Chains[name] = rules
	}
	return rs
}

// elem adds an element to map or set m; the first service to claim an address and port wins, as
// the first matching iptables rule.
func (rs NftRuleset) elem(m, key, value string) {
	if _, ok := rs.Maps[m][key]; !ok {
		rs.Maps[m][key] = value
	}
}

// nftPortBuilder writes one service port's chains into an NftRuleset.
type nftPortBuilder struct {
	svcPortBuilder
	rs NftRuleset
}

func (b nftPortBuilder) elem(m, key, value string) { b.rs.elem(m, key, value) }

// chains is svcPortBuilder.chains for nftables: the same decisions (decide), nft rules.
func (b nftPortBuilder) chains() (internal, external string, extHasEndpoints bool) {
	p := b.decide()
	clusterChain, localChain := nftName("svc", b.id), nftName("svl", b.id)
	internal = p.writeChains(clusterChain, localChain, b.writeServiceChain)
	if !p.external {
		return internal, "", false
	}
	ext := nftName("ext", b.id)
	masq := "jump " + nftMarkMasq
	var rules []string
	switch {
	case !p.etpLocal:
		rules = []string{masq, "goto " + clusterChain}
	default:
		// Pods and the node itself reach a Local service through every endpoint, as kube-proxy.
		if b.cfg.ClusterCIDR.IsValid() {
			rules = append(rules, fmt.Sprintf("ip saddr %s goto %s", b.cfg.ClusterCIDR, clusterChain))
		}
		rules = append(rules, "fib saddr type local "+masq, "fib saddr type local goto "+clusterChain)
		if len(p.local) > 0 {
			rules = append(rules, "goto "+localChain)
		}
	}
	b.rs.Chains[ext] = rules
	return internal, ext, p.extHasEndpoints()
}

// firewall is svcPortBuilder.firewall for nftables.
func (b nftPortBuilder) firewall(external string, ranges []netip.Prefix, lbIPs []netip.Addr) string {
	fw := nftName("fw", b.id)
	var rules []string
	allowFromNode := false
	for _, r := range ranges {
		rules = append(rules, fmt.Sprintf("ip saddr %s goto %s", r, external))
		if b.cfg.NodeIP.IsValid() && r.Contains(b.cfg.NodeIP) {
			allowFromNode = true
		}
	}
	if allowFromNode {
		for _, a := range lbIPs {
			rules = append(rules, fmt.Sprintf("ip saddr %s goto %s", a, external))
		}
	}
	b.rs.Chains[fw] = rules
	return fw
}

// writeServiceChain spreads new connections evenly over eps: one rule that DNATs to
// `numgen random mod n map { i : ip . port }`, so a service costs one chain however many
// endpoints it has (nft loads and lists the whole table's chains for every change, so fewer
// chains make every sync cheaper). With ClientIP affinity each endpoint gets a chain of its own
// that records the client in the endpoint's set, checked first. A pod reaching itself through the
// service (hairpin) is masqueraded in postrouting (the hairpin-endpoints set), as the iptables
// endpoint chain's mark does.
func (b nftPortBuilder) writeServiceChain(name string, eps []endpoint) {
	affinity := b.affinitySeconds()
	proto := strings.ToLower(string(b.port.Protocol))
	var rules []string
	// Cluster IP traffic from outside the pod network is masqueraded (see Build).
	vip := fmt.Sprintf("ip daddr %s meta l4proto %s th dport %d", b.svc.Spec.ClusterIP, proto, b.port.Port)
	if b.cfg.ClusterCIDR.IsValid() {
		rules = append(rules, fmt.Sprintf("ip saddr != %s %s jump %s", b.cfg.ClusterCIDR, vip, nftMarkMasq))
	} else {
		rules = append(rules, fmt.Sprintf("%s jump %s", vip, nftMarkMasq))
	}
	for _, e := range eps {
		b.elem(nftHairpin, e.ip+" . "+e.ip, "")
	}
	switch {
	case affinity > 0:
		seps := make([]string, len(eps))
		for i, e := range eps {
			seps[i] = nftName("sep", hash(b.id + "/" + e.String())[:12])
			// The set's name carries the timeout: a changed timeout is a new set.
			set := fmt.Sprintf("%s-aff%d", seps[i], affinity)
			b.rs.Sets[set] = fmt.Sprintf("type ipv4_addr; flags dynamic,timeout; timeout %ds;", affinity)
			rules = append(rules, fmt.Sprintf("ip saddr @%s goto %s", set, seps[i]))
			b.rs.Chains[seps[i]] = []string{
				fmt.Sprintf("update @%s { ip saddr }", set),
				fmt.Sprintf("meta l4proto %s dnat to %s", proto, e),
			}
		}
		if len(seps) == 1 {
			rules = append(rules, "goto "+seps[0])
			break
		}
		vmap := make([]string, len(seps))
		for i, sep := range seps {
			vmap[i] = fmt.Sprintf("%d : goto %s", i, sep)
		}
		rules = append(rules, fmt.Sprintf("numgen random mod %d vmap { %s }", len(seps), strings.Join(vmap, ", ")))
	case len(eps) == 1:
		rules = append(rules, fmt.Sprintf("meta l4proto %s dnat to %s", proto, eps[0]))
	default:
		targets := make([]string, len(eps))
		for i, e := range eps {
			targets[i] = fmt.Sprintf("%d : %s . %d", i, e.ip, e.port)
		}
		rules = append(rules, fmt.Sprintf("meta l4proto %s dnat ip to numgen random mod %d map { %s }", proto, len(eps), strings.Join(targets, ", ")))
	}
	b.rs.Chains[name] = rules
}
