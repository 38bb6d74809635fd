package netpol

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	cnpv1 "sigs.k8s.io/network-policy-api/apis/v1beta1"
)

// ClusterNetworkPolicy (policy.networking.k8s.io/v1beta1, sigs.k8s.io/network-policy-api
// v0.3.0) adds two tiers around NetworkPolicy: the Admin tier is judged before it and the
// Baseline tier after it, and only for pods no NetworkPolicy of the direction isolates. Within a
// tier, policies go by priority (lower first; equal priorities by name, which the API leaves
// open) and rules in the order written; the first rule that matches decides: Accept ends the
// direction's judgement (the packet goes on to the other direction's), Deny drops, Pass skips the
// rest of the tier.
//
// Each local pod a tier's policies select gets one tier chain (shared by pods with the same
// selecting policies) holding those policies' rules inline, in order: a Pass is then a return to
// the base chain, which goes on to the next tier.

const (
	mapAdminEgress     = "admin-egress-pods"
	mapAdminIngress    = "admin-ingress-pods"
	mapBaselineEgress  = "baseline-egress-pods"
	mapBaselineIngress = "baseline-ingress-pods"
	setAddrProtoPorts  = "type ipv4_addr . inet_proto . inet_service;"
)

// tier is one of the two ClusterNetworkPolicy tiers, with its maps per direction.
type tier struct {
	name                  cnpv1.Tier
	tag                   string
	ingressMap, egressMap string
}

var (
	adminTier    = tier{name: cnpv1.AdminTier, tag: "a", ingressMap: mapAdminIngress, egressMap: mapAdminEgress}
	baselineTier = tier{name: cnpv1.BaselineTier, tag: "b", ingressMap: mapBaselineIngress, egressMap: mapBaselineEgress}
)

func (t tier) verdictMap(d direction) string {
	if d.policyType == ingress.policyType {
		return t.ingressMap
	}
	return t.egressMap
}

// cnpRule is one rule of a ClusterNetworkPolicy in one direction, in a shape both directions share.
type cnpRule struct {
	name      string
	action    cnpv1.ClusterNetworkPolicyRuleAction
	peers     []cnpPeer
	protocols []cnpv1.ClusterNetworkPolicyProtocol
}

type cnpPeer struct {
	namespaces *metav1.LabelSelector
	pods       *cnpv1.NamespacedPod
	nodes      *metav1.LabelSelector
	networks   []cnpv1.CIDR
	domains    bool
}

func cnpRules(d direction, p *cnpv1.ClusterNetworkPolicy) []cnpRule {
	var out []cnpRule
	if d.policyType == ingress.policyType {
		for _, r := range p.Spec.Ingress {
			rule := cnpRule{name: r.Name, action: r.Action, protocols: r.Protocols}
			for _, f := range r.From {
				rule.peers = append(rule.peers, cnpPeer{namespaces: f.Namespaces, pods: f.Pods})
			}
			out = append(out, rule)
		}
		return out
	}
	for _, r := range p.Spec.Egress {
		rule := cnpRule{name: r.Name, action: r.Action, protocols: r.Protocols}
		for _, t := range r.To {
			rule.peers = append(rule.peers, cnpPeer{namespaces: t.Namespaces, pods: t.Pods, nodes: t.Nodes,
				networks: t.Networks, domains: len(t.DomainNames) > 0})
		}
		out = append(out, rule)
	}
	return out
}

// buildTier adds one tier's chains, sets and map elements for direction d to rs.
func (ix *index) buildTier(rs *Ruleset, t tier, d direction) {
	var policies []*cnpv1.ClusterNetworkPolicy
	for _, p := range ix.in.ClusterPolicies {
		if p.Spec.Tier == t.name {
			policies = append(policies, p)
		}
	}
	slices.SortFunc(policies, func(a, b *cnpv1.ClusterNetworkPolicy) int {
		return cmp.Or(cmp.Compare(a.Spec.Priority, b.Spec.Priority), cmp.Compare(a.Name, b.Name))
	})
	// Per policy with rules in d: the rules (once) and the local pods its subject selects.
	type compiled struct {
		key   string
		rules []string
	}
	selecting := map[netip.Addr][]compiled{}
	for _, p := range policies {
		rules := cnpRules(d, p)
		if len(rules) == 0 {
			continue
		}
		subject := ix.cnpSubject(p.Spec.Subject)
		var local []podInfo
		for _, s := range subject {
			if s.pod.Spec.NodeName == ix.in.NodeName {
				local = append(local, s)
			}
		}
		if len(local) == 0 {
			continue
		}
		c := compiled{key: "c" + t.tag + d.tag + "-" + shortHash(p.Name)}
		for i, r := range rules {
			c.rules = append(c.rules, ix.cnpRuleLines(rs, d, c.key, i, p.Name, r, local)...)
		}
		for _, s := range local {
			selecting[s.addr] = append(selecting[s.addr], c)
		}
	}
	for addr, list := range selecting {
		keys := make([]string, len(list))
		for i, c := range list {
			keys[i] = c.key
		}
		name := "t" + t.tag + d.tag + "-" + shortHash(strings.Join(keys, ","))
		if _, ok := rs.Chains[name]; !ok {
			var rules []string
			for _, c := range list {
				rules = append(rules, c.rules...)
			}
			rs.Chains[name] = rules
		}
		rs.Maps[t.verdictMap(d)][addr.String()] = "jump " + name
	}
}

// cnpSubject are the pods a policy's subject selects.
func (ix *index) cnpSubject(s cnpv1.ClusterNetworkPolicySubject) []podInfo {
	switch {
	case s.Namespaces != nil:
		return ix.podsIn(selector(s.Namespaces), labels.Everything())
	case s.Pods != nil:
		return ix.podsIn(selector(&s.Pods.NamespaceSelector), selector(&s.Pods.PodSelector))
	}
	return nil
}

// podsIn are the pods matching podSel in the namespaces matching nsSel.
func (ix *index) podsIn(nsSel, podSel labels.Selector) []podInfo {
	var out []podInfo
	for ns, l := range ix.nsLabels {
		if !nsSel.Matches(l) {
			continue
		}
		for _, p := range ix.byNS[ns] {
			if podSel.Matches(labels.Set(p.pod.Labels)) {
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b podInfo) int { return a.addr.Compare(b.addr) })
	return out
}

// cnpRuleLines are the nft rules of one ClusterNetworkPolicy rule: one per protocol entry (or
// one for all traffic), each ending in the rule's verdict.
func (ix *index) cnpRuleLines(rs *Ruleset, d direction, key string, i int, policy string, r cnpRule, local []podInfo) []string {
	verdict := "accept"
	switch r.action {
	case cnpv1.ClusterNetworkPolicyRuleActionDeny:
		verdict = fmt.Sprintf("counter name %s drop", d.counter)
	case cnpv1.ClusterNetworkPolicyRuleActionPass:
		verdict = "return"
	}
	label := r.name
	if label == "" {
		label = fmt.Sprint(i)
	}
	comment := fmt.Sprintf(" comment %q", "cnp "+policy+" "+label)
	ranges, peerPods := ix.cnpPeers(r.peers)
	match := d.peerField + " @" + internSet(rs.Sets, setIntervals, intervalElements(ranges)) + " "
	if len(r.protocols) == 0 {
		return []string{match + verdict + comment}
	}
	var out []string
	for _, p := range r.protocols {
		switch {
		case p.DestinationNamedPort != "":
			dests := local
			if d.policyType == egress.policyType {
				dests = peerPods
			}
			name := internSet(rs.Sets, setAddrProtoPorts, namedPortAnyProtocol(dests, p.DestinationNamedPort))
			out = append(out, fmt.Sprintf("%sip daddr . meta l4proto . th dport @%s %s%s", match, name, verdict, comment))
		case p.TCP != nil:
			out = append(out, match+protoMatch("tcp", p.TCP.DestinationPort)+verdict+comment)
		case p.UDP != nil:
			out = append(out, match+protoMatch("udp", p.UDP.DestinationPort)+verdict+comment)
		case p.SCTP != nil:
			out = append(out, match+protoMatch("sctp", p.SCTP.DestinationPort)+verdict+comment)
		}
	}
	return out
}

func protoMatch(proto string, port *cnpv1.Port) string {
	switch {
	case port == nil:
		return "meta l4proto " + proto + " "
	case port.Range != nil:
		return fmt.Sprintf("meta l4proto %s th dport %d-%d ", proto, port.Range.Start, port.Range.End)
	default:
		return fmt.Sprintf("meta l4proto %s th dport %d ", proto, port.Number)
	}
}

// namedPortAnyProtocol are "address . protocol . port" of every pod in pods with a container port
// named name (its own protocol).
func namedPortAnyProtocol(pods []podInfo, name string) []string {
	var out []string
	for _, p := range pods {
		for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP} {
			if port, ok := namedPort(p.pod, name, proto); ok {
				out = append(out, fmt.Sprintf("%s . %s . %d", p.addr, strings.ToLower(string(proto)), port))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cnpPeers are the addresses a rule's peers match: pods, nodes' addresses and networks, merged;
// and the pods among them (for named ports). Domain names are not supported: such a peer
// matches nothing, which fails closed for the Accept rules the API allows them in.
func (ix *index) cnpPeers(peers []cnpPeer) ([]addrRange, []podInfo) {
	var all []addrRange
	var pods []podInfo
	for _, p := range peers {
		switch {
		case p.namespaces != nil:
			pods = append(pods, ix.podsIn(selector(p.namespaces), labels.Everything())...)
		case p.pods != nil:
			pods = append(pods, ix.podsIn(selector(&p.pods.NamespaceSelector), selector(&p.pods.PodSelector))...)
		case p.nodes != nil:
			sel := selector(p.nodes)
			for _, n := range ix.in.Nodes {
				if !sel.Matches(labels.Set(n.Labels)) {
					continue
				}
				for _, a := range n.Status.Addresses {
					if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
						all = append(all, addrRange{ip, ip})
					}
				}
			}
		case len(p.networks) > 0:
			for _, c := range p.networks {
				if pfx, err := netip.ParsePrefix(string(c)); err == nil && pfx.Addr().Is4() {
					all = append(all, prefixRange(pfx))
				}
			}
		}
	}
	for _, p := range pods {
		all = append(all, addrRange{p.addr, p.addr})
	}
	return mergeRanges(all), pods
}
