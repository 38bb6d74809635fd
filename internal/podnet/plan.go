package podnet

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Route is one pod-network route: Dst (a node's podCIDR) via Gw (that node's address).
type Route struct {
	Dst netip.Prefix
	Gw  netip.Addr
	// Node is the node the route leads to (empty for routes read back from the kernel).
	Node string
}

func (r Route) String() string { return r.Dst.String() + " via " + r.Gw.String() }

// Input is what Desire decides from.
type Input struct {
	// Self is this node's name: its own podCIDR is on its bridge, not routed.
	Self string
	// Nodes are every Node of the cluster.
	Nodes []*corev1.Node
	// OnLink are the host's directly connected IPv4 subnets (its addresses with their masks, not
	// loopback): host-gw can only use a gateway on one of them.
	OnLink []netip.Prefix
}

// Skipped is a node that gets no route, and why.
type Skipped struct {
	Node   string
	Reason string
}

// Desired is the routes this node should hold, its own pod ranges (for masquerading) and the
// nodes left out.
type Desired struct {
	Routes  []Route
	OwnPods []netip.Prefix
	Skipped []Skipped
}

// podCIDRs are a node's IPv4 pod ranges.
func podCIDRs(n *corev1.Node) []netip.Prefix {
	raw := n.Spec.PodCIDRs
	if len(raw) == 0 && n.Spec.PodCIDR != "" {
		raw = []string{n.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for _, s := range raw {
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
			out = append(out, p.Masked())
		}
	}
	return out
}

// nodeIP is a node's first IPv4 InternalIP.
func nodeIP(n *corev1.Node) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// Desire decides the routes: every other node's IPv4 podCIDR via its InternalIP, when that address
// is on one of this host's subnets (host-gw needs one L2 segment; other nodes are reported in
// Skipped and their pods are unreachable from here). A podCIDR that overlaps this node's own, a
// host subnet or another node's route is left out too, so a bad Node object can never hijack
// local traffic.
func Desire(in Input) Desired {
	var d Desired
	for _, n := range in.Nodes {
		if n.Name == in.Self {
			d.OwnPods = append(d.OwnPods, podCIDRs(n)...)
		}
	}
	nodes := slices.Clone(in.Nodes)
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range nodes {
		if n.Name == in.Self || n.DeletionTimestamp != nil {
			continue
		}
		cidrs := podCIDRs(n)
		if len(cidrs) == 0 {
			continue // node IPAM has not given it one yet
		}
		gw, ok := nodeIP(n)
		if !ok {
			d.Skipped = append(d.Skipped, Skipped{n.Name, "no IPv4 InternalIP"})
			continue
		}
		if gw.IsLoopback() || gw.IsUnspecified() {
			d.Skipped = append(d.Skipped, Skipped{n.Name, fmt.Sprintf("InternalIP %s is not reachable from other hosts", gw)})
			continue
		}
		if !slices.ContainsFunc(in.OnLink, func(p netip.Prefix) bool { return p.Contains(gw) }) {
			d.Skipped = append(d.Skipped, Skipped{n.Name, fmt.Sprintf("InternalIP %s is not on this host's subnets (host-gw needs one L2 segment)", gw)})
			continue
		}
		for _, c := range cidrs {
			overlaps := func(p netip.Prefix) bool { return p.Overlaps(c) }
			switch {
			case slices.ContainsFunc(d.OwnPods, overlaps):
				d.Skipped = append(d.Skipped, Skipped{n.Name, fmt.Sprintf("podCIDR %s overlaps this node's own", c)})
			case slices.ContainsFunc(in.OnLink, overlaps):
				d.Skipped = append(d.Skipped, Skipped{n.Name, fmt.Sprintf("podCIDR %s overlaps a host subnet", c)})
			case slices.ContainsFunc(d.Routes, func(r Route) bool { return r.Dst.Overlaps(c) }):
				d.Skipped = append(d.Skipped, Skipped{n.Name, fmt.Sprintf("podCIDR %s overlaps another node's", c)})
			default:
				d.Routes = append(d.Routes, Route{Dst: c, Gw: gw, Node: n.Name})
			}
		}
	}
	return d
}

// Plan is what turns the present routes into the wanted ones: routes to add or replace (a new
// podCIDR, or a node whose address changed) and routes to delete (a node that went, or a podCIDR
// no longer wanted). Routes are compared by destination and gateway.
func Plan(want, present []Route) (replace, del []Route) {
	have := map[netip.Prefix]netip.Addr{}
	for _, r := range present {
		have[r.Dst] = r.Gw
	}
	wanted := map[netip.Prefix]bool{}
	for _, r := range want {
		wanted[r.Dst] = true
		if gw, ok := have[r.Dst]; !ok || gw != r.Gw {
			replace = append(replace, r)
		}
	}
	for _, r := range present {
		if !wanted[r.Dst] {
			del = append(del, r)
		}
	}
	return replace, del
}

// MasqueradeRules are the rules of the node's nat chain (hooked from POSTROUTING): traffic from
// this node's pods keeps its source toward the cluster's pod range (and multicast), and is
// masqueraded toward anything else (outside the cluster). Without own pod ranges the chain is
// empty.
func MasqueradeRules(chain string, ownPods []netip.Prefix, clusterCIDR netip.Prefix) [][]string {
	var out [][]string
	for _, p := range ownPods {
		src := p.String()
		if clusterCIDR.IsValid() {
			out = append(out, []string{"-A", chain, "-s", src, "-d", clusterCIDR.String(), "-m", "comment", "--comment", "pod to pod: no NAT", "-j", "RETURN"})
		}
		out = append(out,
			[]string{"-A", chain, "-s", src, "-d", p.String(), "-j", "RETURN"},
			[]string{"-A", chain, "-s", src, "-d", "224.0.0.0/4", "-j", "RETURN"},
			[]string{"-A", chain, "-s", src, "-m", "comment", "--comment", "pods leaving the cluster", "-j", "MASQUERADE"})
	}
	return out
}
