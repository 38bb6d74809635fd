package netpol

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	cnpv1 "sigs.k8s.io/network-policy-api/apis/v1beta1"
)

// Input is what Build decides from: the informers' objects and this node.
type Input struct {
	// NodeName is this node: its pods are the ones whose policies it enforces.
	NodeName   string
	Policies   []*networkingv1.NetworkPolicy
	Pods       []*corev1.Pod
	Namespaces []*corev1.Namespace
	// ClusterPolicies are the ClusterNetworkPolicies (Admin and Baseline tiers), when their CRD
	// is installed; Nodes are the cluster's nodes, whose addresses their nodes peers match.
	ClusterPolicies []*cnpv1.ClusterNetworkPolicy
	Nodes           []*corev1.Node
	// LogDrops adds a rate-limited kernel log line before every drop (--network-policy-log).
	LogDrops bool
}

// Set is one nftables set of the table: its declaration and its elements (sorted, canonical, so
// that two Builds of the same input give equal sets and Plan can diff them element by element).
type Set struct {
	// Spec is the body of the set's declaration, e.g. "type ipv4_addr; flags interval;".
	Spec     string
	Elements []string
}

// Ruleset is the desired content of the node's table: chains (rules in order), sets and the two
// verdict maps from a local pod's address to the chain of the policies isolating it.
type Ruleset struct {
	Chains map[string][]string
	Sets   map[string]Set
	Maps   map[string]map[string]string
}

// Rules is the number of rules in rs (a metric, and the size of a ruleset in benchmarks).
func (rs Ruleset) Rules() int {
	n := 0
	for _, r := range rs.Chains {
		n += len(r)
	}
	return n
}

// Elements is the number of set and map elements in rs.
func (rs Ruleset) Elements() int {
	n := 0
	for _, s := range rs.Sets {
		n += len(s.Elements)
	}
	for _, m := range rs.Maps {
		n += len(m)
	}
	return n
}

// The table's base chains and verdict maps. Egress is judged before ingress: an accept in one
// base chain passes the packet on to the next base chain of the hook, a drop ends it, so a
// packet between two isolated pods must be allowed by both.
const (
	chainEgress  = "egress"
	chainIngress = "ingress"
	mapEgress    = "egress-pods"
	mapIngress   = "ingress-pods"
	setIntervals = "type ipv4_addr; flags interval;"
	setAddrPorts = "type ipv4_addr . inet_service;"
)

// baseChains are the hooks: the forward path, after the service proxy's DNAT (priority dstnat),
// so a Service's traffic is judged on its backend's address and port.
var baseChains = map[string]string{
	chainEgress:  "type filter hook forward priority filter + 1; policy accept;",
	chainIngress: "type filter hook forward priority filter + 2; policy accept;",
}

// verdictMaps are the declarations of the two maps.
var verdictMaps = map[string]string{
	mapEgress:          "type ipv4_addr : verdict;",
	mapIngress:         "type ipv4_addr : verdict;",
	mapAdminEgress:     "type ipv4_addr : verdict;",
	mapAdminIngress:    "type ipv4_addr : verdict;",
	mapBaselineEgress:  "type ipv4_addr : verdict;",
	mapBaselineIngress: "type ipv4_addr : verdict;",
}

// direction is one of ingress and egress, with what differs between them.
type direction struct {
	policyType networkingv1.PolicyType
	// tag is the short name in chain names ("i" or "e"), word the long one (logs, comments).
	tag, word string
	// peerField matches the peer's address, podField the selected pod's.
	peerField, podField string
	counter, verdictMap string
}

var (
	ingress = direction{policyType: networkingv1.PolicyTypeIngress, tag: "i", word: "ingress",
		peerField: "ip saddr", podField: "ip daddr", counter: CounterDroppedIngress, verdictMap: mapIngress}
	egress = direction{policyType: networkingv1.PolicyTypeEgress, tag: "e", word: "egress",
		peerField: "ip daddr", podField: "ip saddr", counter: CounterDroppedEgress, verdictMap: mapEgress}
)

// podInfo is a pod that takes part in the pod network: not on the host's network, not finished,
// with an IPv4 address.
type podInfo struct {
	pod  *corev1.Pod
	addr netip.Addr
}

// index holds the input in the shapes Build looks things up by.
type index struct {
	in       Input
	pods     []podInfo
	byNS     map[string][]podInfo
	nsLabels map[string]labels.Set
	// peerCache memoizes selectedPeers within one Build.
	peerCache map[string][]podInfo
}

func newIndex(in Input) *index {
	ix := &index{in: in, byNS: map[string][]podInfo{}, nsLabels: map[string]labels.Set{}, peerCache: map[string][]podInfo{}}
	for _, ns := range in.Namespaces {
		ix.nsLabels[ns.Name] = labels.Set(ns.Labels)
	}
	for _, p := range in.Pods {
		a, ok := podAddr(p)
		if !ok {
			continue
		}
		pi := podInfo{pod: p, addr: a}
		ix.pods = append(ix.pods, pi)
		ix.byNS[p.Namespace] = append(ix.byNS[p.Namespace], pi)
	}
	return ix
}

// podAddr is the pod's IPv4 address, if it is a pod of the pod network that may still send or
// receive. Pods on the host's network are never selected (their address is the node's).
func podAddr(p *corev1.Pod) (netip.Addr, bool) {
	if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return netip.Addr{}, false
	}
	ips := []string{p.Status.PodIP}
	for _, ip := range p.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// selector turns a label selector into a labels.Selector; one that does not parse (the API
// validates them, so only a corrupt object) selects nothing, failing closed.
func selector(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return labels.Everything()
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// policyTypes are the directions a policy isolates in: its policyTypes, or by Kubernetes'
// default Ingress always and Egress when it has egress rules.
func policyTypes(np *networkingv1.NetworkPolicy) (in, out bool) {
	if len(np.Spec.PolicyTypes) == 0 {
		return true, len(np.Spec.Egress) > 0
	}
	for _, t := range np.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			in = true
		case networkingv1.PolicyTypeEgress:
			out = true
		}
	}
	return in, out
}

// Build is the content of the node's table for in.
func Build(in Input) Ruleset {
	ix := newIndex(in)
	rs := Ruleset{Chains: map[string][]string{}, Sets: map[string]Set{}, Maps: map[string]map[string]string{}}
	for name := range verdictMaps {
		rs.Maps[name] = map[string]string{}
	}
	// The tiers in order: ClusterNetworkPolicy's Admin, NetworkPolicy, then Baseline (only
	// reached for a pod no NetworkPolicy isolates: the NetworkPolicy chain ends in a drop).
	rs.Chains[chainEgress] = []string{"ct state established,related accept",
		"ip saddr vmap @" + mapAdminEgress, "ip saddr vmap @" + mapEgress, "ip saddr vmap @" + mapBaselineEgress}
	rs.Chains[chainIngress] = []string{"ct state established,related accept",
		"ip daddr vmap @" + mapAdminIngress, "ip daddr vmap @" + mapIngress, "ip daddr vmap @" + mapBaselineIngress}

	policies := slices.Clone(in.Policies)
	slices.SortFunc(policies, func(a, b *networkingv1.NetworkPolicy) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, d := range []direction{ingress, egress} {
		ix.buildTier(&rs, adminTier, d)
		ix.buildTier(&rs, baselineTier, d)
		// Which of this node's pods each policy of the direction selects, and per pod the
		// policies selecting it.
		selecting := map[netip.Addr][]string{}
		for _, np := range policies {
			isIn, isOut := policyTypes(np)
			if (d.policyType == networkingv1.PolicyTypeIngress && !isIn) || (d.policyType == networkingv1.PolicyTypeEgress && !isOut) {
				continue
			}
			selected := ix.localSelected(np)
			if len(selected) == 0 {
				continue
			}
			chain := policyChain(d, np)
			rs.Chains[chain] = ix.policyRules(d, np, chain, selected, rs.Sets)
			for _, p := range selected {
				selecting[p.addr] = append(selecting[p.addr], chain)
			}
		}
		for addr, chains := range selecting {
			name := selectionChain(d, chains)
			if _, ok := rs.Chains[name]; !ok {
				rules := make([]string, 0, len(chains)+2)
				for _, c := range chains {
					rules = append(rules, "jump "+c)
				}
				if in.LogDrops {
					rules = append(rules, fmt.Sprintf(`limit rate 10/second burst 20 packets log prefix "skiff-netpol %s drop: " level info`, d.word))
				}
				rules = append(rules, fmt.Sprintf("counter name %s drop", d.counter))
				rs.Chains[name] = rules
			}
			rs.Maps[d.verdictMap][addr.String()] = "jump " + name
		}
	}
	return rs
}

// localSelected are the pods of this node the policy selects, by address.
func (ix *index) localSelected(np *networkingv1.NetworkPolicy) []podInfo {
	sel := selector(&np.Spec.PodSelector)
	var out []podInfo
	for _, p := range ix.byNS[np.Namespace] {
		if p.pod.Spec.NodeName == ix.in.NodeName && sel.Matches(labels.Set(p.pod.Labels)) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b podInfo) int { return a.addr.Compare(b.addr) })
	return slices.CompactFunc(out, func(a, b podInfo) bool { return a.addr == b.addr })
}

// shortHash names chains and sets: object names are too long and too free for nft identifiers.
func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// policyChain is the chain of one policy's rules in one direction.
func policyChain(d direction, np *networkingv1.NetworkPolicy) string {
	return "p" + d.tag + "-" + shortHash(np.Namespace+"/"+np.Name)
}

// selectionChain is the chain shared by every local pod that the same policies select in d.
func selectionChain(d direction, policyChains []string) string {
	return "s" + d.tag + "-" + shortHash(strings.Join(policyChains, ","))
}

// policyRules are the rules of np's chain in d: each rule of the policy becomes one nft rule per
// port entry, accepting what it allows (an accept ends the direction's base chain); a packet no
// rule accepts returns to the selection chain, which drops it when no other policy accepts it.
func (ix *index) policyRules(d direction, np *networkingv1.NetworkPolicy, chain string, selected []podInfo, sets map[string]Set) []string {
	type rule struct {
		peers []networkingv1.NetworkPolicyPeer
		ports []networkingv1.NetworkPolicyPort
	}
	var rules []rule
	if d.policyType == networkingv1.PolicyTypeIngress {
		for _, r := range np.Spec.Ingress {
			rules = append(rules, rule{r.From, r.Ports})
		}
	} else {
		for _, r := range np.Spec.Egress {
			rules = append(rules, rule{r.To, r.Ports})
		}
	}
	comment := fmt.Sprintf(" comment %q", np.Namespace+"/"+np.Name)
	var out []string
	for _, r := range rules {
		match := ""
		var peerAddrs []netip.Addr
		var peerRanges []addrRange
		if len(r.peers) > 0 {
			peerAddrs, peerRanges = ix.peers(np.Namespace, r.peers)
			match = d.peerField + " @" + internSet(sets, setIntervals, intervalElements(peerRanges)) + " "
		}
		if len(r.ports) == 0 {
			out = append(out, match+"accept"+comment)
			continue
		}
		for _, p := range r.ports {
			proto := strings.ToLower(string(ptrOr(p.Protocol, corev1.ProtocolTCP)))
			switch {
			case p.Port == nil:
				out = append(out, fmt.Sprintf("%smeta l4proto %s accept%s", match, proto, comment))
			case p.Port.IntVal != 0 || p.Port.StrVal == "":
				ports := fmt.Sprint(p.Port.IntVal)
				if p.EndPort != nil && *p.EndPort > p.Port.IntVal {
					ports = fmt.Sprintf("%d-%d", p.Port.IntVal, *p.EndPort)
				}
				out = append(out, fmt.Sprintf("%smeta l4proto %s th dport %s accept%s", match, proto, ports, comment))
			default:
				// A named port is resolved per destination pod: in ingress the selected pod, in
				// egress each peer pod; the set pairs those pods' addresses with their number.
				dests := selected
				if d.policyType == networkingv1.PolicyTypeEgress {
					dests = ix.egressDestinations(r.peers, peerAddrs, peerRanges)
				}
				name := internSet(sets, setAddrPorts, namedPortElements(dests, p.Port.StrVal, corev1.Protocol(strings.ToUpper(proto))))
				out = append(out, fmt.Sprintf("%smeta l4proto %s ip daddr . th dport @%s accept%s", match, proto, name, comment))
			}
		}
	}
	return out
}

// internSet adds a set of these contents to sets, named by them, and returns its name. Sets are
// shared by content (policies naming the same peers hold one copy) and never change: a change of
// the addresses is a new set and a rewrite of the chains naming it. Element commands on a big
// table are what nft is slow at (it reads every element of the table first), chain rewrites are
// cheap.
func internSet(sets map[string]Set, spec string, elements []string) string {
	h := sha256.New()
	h.Write([]byte(spec))
	for _, e := range elements {
		h.Write([]byte{0})
		h.Write([]byte(e))
	}
	name := "s-" + hex.EncodeToString(h.Sum(nil)[:8])
	if _, ok := sets[name]; !ok {
		sets[name] = Set{Spec: spec, Elements: elements}
	}
	return name
}

// egressDestinations are the pods a named port of an egress rule may lead to: every pod when
// the rule has no peers, else the pods whose address the peers allow (a pod selected by a
// selector, or a pod inside an ipBlock).
func (ix *index) egressDestinations(peers []networkingv1.NetworkPolicyPeer, addrs []netip.Addr, ranges []addrRange) []podInfo {
	if len(peers) == 0 {
		return ix.pods
	}
	var out []podInfo
	for _, p := range ix.pods {
		// ranges hold every peer address (addrs merged into them): one sorted search.
		if rangesContain(ranges, p.addr) {
			out = append(out, p)
		}
	}
	return out
}

// namedPortElements are "address . port" of every pod in pods that has a container port named
// name with protocol proto (restartable init containers, sidecars, included).
func namedPortElements(pods []podInfo, name string, proto corev1.Protocol) []string {
	var out []string
	for _, p := range pods {
		if port, ok := namedPort(p.pod, name, proto); ok {
			out = append(out, fmt.Sprintf("%s . %d", p.addr, port))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func namedPort(p *corev1.Pod, name string, proto corev1.Protocol) (int32, bool) {
	containers := slices.Concat(p.Spec.InitContainers, p.Spec.Containers)
	for _, c := range containers {
		for _, cp := range c.Ports {
			if cp.Name == name && ptrOr(&cp.Protocol, corev1.ProtocolTCP) == proto {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// ptrOr is *p, or def when p is nil or empty.
func ptrOr[T comparable](p *T, def T) T {
	var zero T
	if p == nil || *p == zero {
		return def
	}
	return *p
}

// peers are the addresses a rule's peers allow: the pods its selectors match and the ipBlocks'
// ranges (each minus its excepts). ranges includes addrs, merged.
func (ix *index) peers(policyNS string, peers []networkingv1.NetworkPolicyPeer) (addrs []netip.Addr, ranges []addrRange) {
	var all []addrRange
	for _, peer := range peers {
		if peer.IPBlock != nil {
			all = append(all, ipBlockRanges(peer.IPBlock)...)
			continue
		}
		for _, p := range ix.selectedPeers(policyNS, peer) {
			addrs = append(addrs, p.addr)
			all = append(all, addrRange{p.addr, p.addr})
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs), mergeRanges(all)
}

// selectedPeers are the pods a selector peer matches: podSelector alone in the policy's own
// namespace, namespaceSelector alone every pod of the namespaces it matches, both together the
// matching pods of the matching namespaces.
func (ix *index) selectedPeers(policyNS string, peer networkingv1.NetworkPolicyPeer) []podInfo {
	// Many policies name the same peers (a namespace's team label, app=dns): match once per Build.
	key := policyNS + "\x00" + formatSelector(peer.PodSelector) + "\x00" + formatSelector(peer.NamespaceSelector)
	if cached, ok := ix.peerCache[key]; ok {
		return cached
	}
	out := ix.matchPeers(policyNS, peer)
	ix.peerCache[key] = out
	return out
}

// formatSelector is a selector's canonical text ("<nil>" for none, which differs from empty).
func formatSelector(s *metav1.LabelSelector) string {
	if s == nil {
		return "<nil>"
	}
	return metav1.FormatLabelSelector(s)
}

func (ix *index) matchPeers(policyNS string, peer networkingv1.NetworkPolicyPeer) []podInfo {
	podSel := selector(peer.PodSelector)
	var namespaces []string
	if peer.NamespaceSelector == nil {
		namespaces = []string{policyNS}
	} else {
		nsSel := selector(peer.NamespaceSelector)
		for name, l := range ix.nsLabels {
			if nsSel.Matches(l) {
				namespaces = append(namespaces, name)
			}
		}
	}
	var out []podInfo
	for _, ns := range namespaces {
		for _, p := range ix.byNS[ns] {
			if podSel.Matches(labels.Set(p.pod.Labels)) {
				out = append(out, p)
			}
		}
	}
	return out
}
