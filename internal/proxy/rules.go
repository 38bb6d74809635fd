package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Config is what Build needs to know about the node.
type Config struct {
	// Prefix starts every chain name (at most 8 characters, see NodePrefix).
	Prefix string
	// NodeName selects the local endpoints (internal/externalTrafficPolicy Local).
	NodeName string
	// NodePortAddresses are the addresses NodePorts answer on; empty means every local address.
	NodePortAddresses []netip.Addr
	// ClusterCIDR is the pod network: traffic to a cluster IP from outside it is masqueraded.
	ClusterCIDR netip.Prefix
	// ServiceCIDR is the service range: traffic to it that no rule translated is rejected.
	ServiceCIDR netip.Prefix
	// ExtraServiceCIDRs are the other ServiceCIDR objects' IPv4 ranges (ExtraServiceCIDRs, set at
	// each sync): refused likewise, so a cluster IP of theirs without rules never leaves by the
	// default route either.
	ExtraServiceCIDRs []netip.Prefix
	// MasqueradeMark is the fwmark bit that asks for masquerading (default 0x4000, as kube-proxy).
	MasqueradeMark uint32
	// NodeIP is the node's primary address: when a Service's loadBalancerSourceRanges hold it, the
	// node's own connections to the load-balancer IPs (whose source is then the IP itself) are let
	// through, as kube-proxy.
	NodeIP netip.Addr
	// ConntrackTCPLiberal is the node's net.netfilter.nf_conntrack_tcp_be_liberal (Run reads it at
	// start, as kube-proxy). Unset, forwarded packets conntrack calls INVALID are dropped: an
	// out-of-window segment of a service connection would otherwise leave un-NATed, and the
	// client, which does not know the endpoint's address, answers it with a RST that kills the
	// connection (kubernetes/kubernetes#74839). Liberal tracking marks only out-of-window RSTs
	// INVALID, so nothing needs dropping.
	ConntrackTCPLiberal bool
}

// NodePrefix is a node's chain prefix: "SK" and six characters of a hash of key (the node's data
// dir), so it is stable across restarts and distinct between nodes sharing a host.
func NodePrefix(key string) string {
	return "SK" + hash(key)[:6]
}

// DeviceName is the node's service-range interface for prefix (at most 15 characters).
func DeviceName(prefix string) string {
	return "skp" + strings.ToLower(strings.TrimPrefix(prefix, "SK"))
}

// Ruleset is the desired content of every chain the proxy owns, per table. The order of rules
// inside a chain is significant; chains are unordered.
type Ruleset struct {
	NAT    map[string][]string
	Filter map[string][]string
}

func (c Config) chain(kind string) string { return c.Prefix + "-" + kind }

// Top-level chain names.
func (c Config) servicesChain() string    { return c.chain("SERVICES") }
func (c Config) nodePortsChain() string   { return c.chain("NODEPORTS") }
func (c Config) postroutingChain() string { return c.chain("POSTRTG") }
func (c Config) markMasqChain() string    { return c.chain("MARK-MASQ") }
func (c Config) filterChain() string      { return c.chain("FILTER") }
func (c Config) extFilterChain() string   { return c.chain("EXTFILTER") }
func (c Config) firewallChain() string    { return c.chain("FIREWALL") }
func (c Config) lbFirewallChain() string  { return c.chain("LBFW") }
func (c Config) forwardChain() string     { return c.chain("FORWARD") }

// serviceRanges are the ranges whose untranslated traffic is refused: the service range, then the
// other ServiceCIDRs'.
func (c Config) serviceRanges() []netip.Prefix {
	var out []netip.Prefix
	if c.ServiceCIDR.IsValid() {
		out = append(out, c.ServiceCIDR)
	}
	return append(out, c.ExtraServiceCIDRs...)
}

func (c Config) mark() string {
	m := c.MasqueradeMark
	if m == 0 {
		m = 0x4000
	}
	return fmt.Sprintf("0x%x", m)
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])
}

// endpoint is one backend of a service port.
type endpoint struct {
	key         string // ip:port, computed once
	ip          string
	port        int32
	local       bool
	ready       bool
	serving     bool
	terminating bool
}

func (e endpoint) String() string { return e.key }

// selectEndpoints is kube-proxy's choice: the ready endpoints, or, when none is ready, the
// serving and terminating ones (so a rolling update's last pods keep answering).
func selectEndpoints(eps []endpoint, localOnly bool) []endpoint {
	var ready, terminating []endpoint
	for _, e := range eps {
		if localOnly && !e.local {
			continue
		}
		switch {
		case e.ready:
			ready = append(ready, e)
		case e.serving && e.terminating:
			terminating = append(terminating, e)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return terminating
}

// proxied reports whether skiff's proxy programs this service at all. As kube-proxy's informers
// select, a service another proxy owns (service.kubernetes.io/service-proxy-name) or one labelled
// service.kubernetes.io/headless is left alone: its cluster IP answers as an address of the
// service range without rules.
func proxied(svc *corev1.Service) bool {
	for _, label := range []string{"service.kubernetes.io/service-proxy-name", "service.kubernetes.io/headless"} {
		if _, ok := svc.Labels[label]; ok {
			return false
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return false
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	return err == nil && ip.Is4()
}

// endpointsFor collects the IPv4 endpoints of one service port from the service's slices,
// deduplicated by address and port and sorted, so the rules are stable.
func endpointsFor(nodeName string, port corev1.ServicePort, slices_ []*discoveryv1.EndpointSlice) []endpoint {
	seen := map[string]bool{}
	var out []endpoint
	for _, s := range slices_ {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		var target int32
		for _, p := range s.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if name == port.Name && proto == port.Protocol && p.Port != nil {
				target = *p.Port
			}
		}
		if target == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			addr, err := netip.ParseAddr(e.Addresses[0])
			if err != nil || !addr.Is4() {
				continue
			}
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			ep := endpoint{
				key: netip.AddrPortFrom(addr, uint16(target)).String(),
				ip:  addr.String(), port: target, ready: ready,
				serving:     ready,
				terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
				local:       e.NodeName != nil && *e.NodeName == nodeName,
			}
			if e.Conditions.Serving != nil {
				ep.serving = *e.Conditions.Serving
			}
			key := ep.String()
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, ep)
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// eachServicePort calls f for every port of every proxied service, in a stable order (services by
// namespace and name), with the port's id and endpoints filled in.
func eachServicePort(cfg Config, services []*corev1.Service, endpointSlices []*discoveryv1.EndpointSlice, f func(b svcPortBuilder)) {
	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range endpointSlices {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" {
			continue
		}
		bySvc[s.Namespace+"/"+name] = append(bySvc[s.Namespace+"/"+name], s)
	}
	svcs := slices.Clone(services)
	slices.SortFunc(svcs, func(a, b *corev1.Service) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, svc := range svcs {
		if !proxied(svc) {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		for _, port := range svc.Spec.Ports {
			f(svcPortBuilder{cfg: cfg, svc: svc, port: port,
				id:  hash(key + ":" + port.Name + "/" + string(port.Protocol))[:12],
				eps: endpointsFor(cfg.NodeName, port, bySvc[key])})
		}
	}
}

// Build computes the whole desired ruleset. It is pure: the same inputs give the same rules.
func Build(cfg Config, services []*corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) Ruleset {
	rs := Ruleset{NAT: map[string][]string{}, Filter: map[string][]string{}}
	mark := cfg.mark()
	var services_, nodePorts, filter, extFilter, lbFirewall []string
	eachServicePort(cfg, services, endpointSlices, func(b svcPortBuilder) {
		b.rs = rs
		svc, port, key := b.svc, b.port, b.svc.Namespace+"/"+b.svc.Name
		proto := "-p " + strings.ToLower(string(port.Protocol))
		comment := fmt.Sprintf(`-m comment --comment "%s:%s"`, key, port.Name)
		dport := fmt.Sprintf("%s -m %s --dport %d", proto, strings.ToLower(string(port.Protocol)), port.Port)

		internal, external, extHasEndpoints := b.chains()
		// With endpoints elsewhere but none this traffic may use (a traffic policy Local and no
		// endpoint on this node) the packet is dropped, as kube-proxy; with none at all, refused.
		noEndpoint := "-j REJECT --reject-with icmp-port-unreachable"
		if b.hasClusterEndpoints() {
			noEndpoint = "-j DROP"
		}
		vip := fmt.Sprintf("-d %s/32 %s", svc.Spec.ClusterIP, dport)
		if internal != "" {
			services_ = append(services_, fmt.Sprintf("%s %s -j %s", comment, vip, internal))
		} else {
			filter = append(filter, fmt.Sprintf(`%s %s %s`, comment, vip, noEndpoint))
		}

		// external has endpoints somewhere; extHasEndpoints says whether outside traffic may
		// use them. Without, the EXT chain still short-circuits pods and the node itself and
		// whatever falls through is dropped (or refused) in the filter table.
		for _, a := range ipv4s(svc.Spec.ExternalIPs) {
			rule := fmt.Sprintf("%s -d %s/32 %s", comment, a, dport)
			if external != "" {
				services_ = append(services_, rule+" -j "+external)
			}
			if !extHasEndpoints {
				extFilter = append(extFilter, rule+" "+noEndpoint)
			}
		}
		lbIPs := ipv4s(lbIngressIPs(svc))
		lbTarget := external
		if ranges := sourceRanges(svc); external != "" && len(lbIPs) > 0 && len(ranges) > 0 {
			lbTarget = b.firewall(external, ranges, lbIPs)
			for _, a := range lbIPs {
				lbFirewall = append(lbFirewall, fmt.Sprintf(`%s -d %s/32 %s -m comment --comment "not in loadBalancerSourceRanges" -j DROP`, comment, a, dport))
			}
		}
		for _, a := range lbIPs {
			rule := fmt.Sprintf("%s -d %s/32 %s", comment, a, dport)
			if external != "" {
				services_ = append(services_, rule+" -j "+lbTarget)
			}
			if !extHasEndpoints {
				extFilter = append(extFilter, rule+" "+noEndpoint)
			}
		}
		if b.nodePort() != 0 {
			np := fmt.Sprintf("%s %s -m %s --dport %d", comment, proto, strings.ToLower(string(port.Protocol)), port.NodePort)
			if external != "" {
				nodePorts = append(nodePorts, np+" -j "+external)
			}
			if !extHasEndpoints {
				extFilter = append(extFilter, np+" -m addrtype --dst-type LOCAL "+noEndpoint)
			}
		}
	})

	// NodePorts last, as kube-proxy: on the node's addresses (and loopback), or every local one.
	if len(cfg.NodePortAddresses) == 0 {
		services_ = append(services_, "-m addrtype --dst-type LOCAL -j "+cfg.nodePortsChain())
	} else {
		for _, a := range cfg.NodePortAddresses {
			services_ = append(services_, fmt.Sprintf("-d %s/32 -j %s", a, cfg.nodePortsChain()))
		}
	}
	rs.NAT[cfg.servicesChain()] = services_
	rs.NAT[cfg.nodePortsChain()] = nodePorts
	rs.NAT[cfg.markMasqChain()] = []string{"-j MARK --or-mark " + mark}
	rs.NAT[cfg.postroutingChain()] = []string{
		fmt.Sprintf("-m mark ! --mark %s/%s -j RETURN", mark, mark),
		"-j MARK --xor-mark " + mark,
		"-j MASQUERADE --random-fully",
	}
	// Whatever reaches the service range untranslated (a VIP without rules, a port the service does
	// not have, before the first sync) is refused here instead of leaving by the default route.
	for _, r := range cfg.serviceRanges() {
		filter = append(filter, fmt.Sprintf(`-d %s -m comment --comment "service range without rules" -j REJECT --reject-with icmp-port-unreachable`, r))
	}
	rs.Filter[cfg.filterChain()] = filter
	rs.Filter[cfg.extFilterChain()] = extFilter
	rs.Filter[cfg.lbFirewallChain()] = lbFirewall
	// The chain is there (and hooked) either way, so a node whose sysctl changed across a restart
	// only rewrites its content.
	rs.Filter[cfg.forwardChain()] = []string{}
	if !cfg.ConntrackTCPLiberal {
		rs.Filter[cfg.forwardChain()] = []string{invalidDropRule}
	}
	// route_localnet lets 127.0.0.1 NodePorts be DNATed; like kube-proxy, refuse other hosts'
	// packets to 127/8 that this opens.
	rs.Filter[cfg.firewallChain()] = []string{
		`! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`,
	}
	return rs
}

// invalidDropRule drops forwarded packets conntrack calls INVALID (see Config.ConntrackTCPLiberal).
const invalidDropRule = `-m conntrack --ctstate INVALID -m comment --comment "conntrack INVALID, kubernetes#74839" -j DROP`

// svcPortBuilder writes one service port's own chains.
type svcPortBuilder struct {
	cfg  Config
	rs   Ruleset
	svc  *corev1.Service
	port corev1.ServicePort
	id   string
	eps  []endpoint
}

// exposed reports whether the port has external traffic at all: a NodePort, external IPs or
// load-balancer IPs.
func (b svcPortBuilder) exposed() bool {
	if b.nodePort() != 0 {
		return true
	}
	for _, ing := range b.svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			return true
		}
	}
	return len(b.svc.Spec.ExternalIPs) > 0
}

func (b svcPortBuilder) hasClusterEndpoints() bool { return len(selectEndpoints(b.eps, false)) > 0 }

// portPlan is what one service port's traffic may use, decided once for both backends.
type portPlan struct {
	// cluster are the endpoints of the port's cluster-wide service chain, local those of its
	// node-local one; a chain is written only when its list is not empty (local: only under a
	// Local traffic policy).
	cluster, local []endpoint
	// internalLocal: cluster IP traffic goes to the local chain (internalTrafficPolicy Local),
	// otherwise to the cluster chain; either only when that chain exists.
	internalLocal bool
	// external: the port is exposed (NodePort, external or load-balancer IPs) and has endpoints
	// somewhere, so external traffic has a chain. etpLocal: that chain sends pods and the node
	// itself to every endpoint (kube-proxy's short-circuit) and the rest to the local chain, if any.
	external, etpLocal bool
}

func (b svcPortBuilder) decide() portPlan {
	itpLocal, etpLocal := b.policies()
	p := portPlan{cluster: selectEndpoints(b.eps, false), internalLocal: itpLocal, etpLocal: etpLocal}
	if itpLocal || etpLocal {
		p.local = selectEndpoints(b.eps, true)
	}
	p.external = b.exposed() && len(p.cluster) > 0
	return p
}

// writeChains writes the port's service chains that have endpoints with write and returns the
// one cluster IP traffic goes to ("" when it has none).
func (p portPlan) writeChains(clusterChain, localChain string, write func(name string, eps []endpoint)) string {
	if len(p.cluster) > 0 {
		write(clusterChain, p.cluster)
	}
	if len(p.local) > 0 {
		write(localChain, p.local)
	}
	switch {
	case p.internalLocal && len(p.local) > 0:
		return localChain
	case !p.internalLocal && len(p.cluster) > 0:
		return clusterChain
	}
	return ""
}

// extHasEndpoints reports whether traffic from outside the node has an endpoint it may use.
func (p portPlan) extHasEndpoints() bool { return p.external && (!p.etpLocal || len(p.local) > 0) }

// chains writes the service port's chains and returns the chain its cluster IP traffic jumps to
// ("" when that traffic has no endpoint), the one its external traffic (NodePorts, external and
// load-balancer IPs) jumps to ("" when not exposed or without any endpoint), and whether traffic
// from outside the node has an endpoint: with externalTrafficPolicy Local and no endpoint on this
// node the external chain still sends pods and the node itself to every endpoint, as kube-proxy's
// short-circuit, and lets the rest fall through to the filter table's DROP.
func (b svcPortBuilder) chains() (internal, external string, extHasEndpoints bool) {
	p := b.decide()
	clusterChain, localChain := b.cfg.chain("SVC-"+b.id), b.cfg.chain("SVL-"+b.id)
	internal = p.writeChains(clusterChain, localChain, b.writeServiceChain)
	if !p.external {
		return internal, "", false
	}
	ext := b.cfg.chain("EXT-" + b.id)
	masq := "-j " + b.cfg.markMasqChain()
	if !p.etpLocal {
		b.rs.NAT[ext] = []string{masq, "-j " + clusterChain}
		return internal, ext, true
	}
	var rules []string
	// Pods and the node itself reach a Local service through every endpoint, as kube-proxy.
	if b.cfg.ClusterCIDR.IsValid() {
		rules = append(rules, fmt.Sprintf("-s %s -j %s", b.cfg.ClusterCIDR, clusterChain))
	}
	rules = append(rules, "-m addrtype --src-type LOCAL "+masq, "-m addrtype --src-type LOCAL -j "+clusterChain)
	if len(p.local) > 0 {
		rules = append(rules, "-j "+localChain)
	}
	b.rs.NAT[ext] = rules
	return internal, ext, p.extHasEndpoints()
}

// policies reports whether internal and external traffic may only use this node's endpoints.
func (b svcPortBuilder) policies() (itpLocal, etpLocal bool) {
	itpLocal = b.svc.Spec.InternalTrafficPolicy != nil && *b.svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	etpLocal = b.svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal &&
		(b.svc.Spec.Type == corev1.ServiceTypeNodePort || b.svc.Spec.Type == corev1.ServiceTypeLoadBalancer || len(b.svc.Spec.ExternalIPs) > 0)
	return itpLocal, etpLocal
}

// affinitySeconds is the ClientIP session affinity timeout, 0 without affinity.
func (b svcPortBuilder) affinitySeconds() int {
	if b.svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		return 0
	}
	if c := b.svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		return int(*c.ClientIP.TimeoutSeconds)
	}
	return 10800
}

// nodePort is the port's node port, 0 when the service type has none.
func (b svcPortBuilder) nodePort() int32 {
	if b.svc.Spec.Type == corev1.ServiceTypeNodePort || b.svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		return b.port.NodePort
	}
	return 0
}

// firewall writes the port's loadBalancerSourceRanges chain: sources in the ranges go on to
// external, and so does the node's own traffic to the load-balancer IPs (source: the IP itself)
// when a range holds the node's address; the rest falls through untranslated to the filter
// table's DROP.
func (b svcPortBuilder) firewall(external string, ranges []netip.Prefix, lbIPs []netip.Addr) string {
	fw := b.cfg.chain("FW-" + b.id)
	var rules []string
	allowFromNode := false
	for _, r := range ranges {
		rules = append(rules, fmt.Sprintf("-s %s -j %s", r, external))
		if b.cfg.NodeIP.IsValid() && r.Contains(b.cfg.NodeIP) {
			allowFromNode = true
		}
	}
	if allowFromNode {
		for _, a := range lbIPs {
			rules = append(rules, fmt.Sprintf("-s %s/32 -j %s", a, external))
		}
	}
	b.rs.NAT[fw] = rules
	return fw
}

// lbIngressIPs are the Service's load-balancer IPs from its status.
func lbIngressIPs(svc *corev1.Service) []string {
	var out []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			out = append(out, ing.IP)
		}
	}
	return out
}

// ipv4s are the valid IPv4 addresses of ss; the others are ignored (the proxy is IPv4 only).
func ipv4s(ss []string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			out = append(out, a)
		}
	}
	return out
}

// sourceRanges are the Service's IPv4 loadBalancerSourceRanges (or, when the field is empty, its
// service.beta.kubernetes.io/load-balancer-source-ranges annotation, as kube-proxy), masked;
// invalid entries are ignored.
func sourceRanges(svc *corev1.Service) []netip.Prefix {
	raw := svc.Spec.LoadBalancerSourceRanges
	if len(raw) == 0 {
		if v := strings.TrimSpace(svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]); v != "" {
			raw = strings.Split(v, ",")
		}
	}
	var out []netip.Prefix
	for _, r := range raw {
		if p, err := netip.ParsePrefix(strings.TrimSpace(r)); err == nil && p.Addr().Is4() {
			out = append(out, p.Masked())
		}
	}
	return out
}

// writeServiceChain spreads new connections evenly over eps (probability 1/n, 1/(n-1), ... 1)
// with ClientIP affinity first when asked, and writes one endpoint chain per endpoint.
func (b svcPortBuilder) writeServiceChain(name string, eps []endpoint) {
	affinity := b.affinitySeconds()
	proto := strings.ToLower(string(b.port.Protocol))
	seps := make([]string, len(eps))
	for i, e := range eps {
		seps[i] = b.cfg.chain("SEP-" + hash(b.id + "/" + e.String())[:12])
		rules := []string{fmt.Sprintf("-s %s/32 -j %s", e.ip, b.cfg.markMasqChain())}
		dnat := fmt.Sprintf("-p %s -m %s -j DNAT --to-destination %s", proto, proto, e)
		if affinity > 0 {
			dnat = fmt.Sprintf("-p %s -m %s -m recent --set --name %s --mask 255.255.255.255 --rsource -j DNAT --to-destination %s", proto, proto, seps[i], e)
		}
		b.rs.NAT[seps[i]] = append(rules, dnat)
	}
	// Cluster IP traffic from outside the pod network (the node itself, other hosts) is
	// masqueraded, so replies come back through this node. Here rather than in the SERVICES chain,
	// so that chain holds one rule per service port: it is walked linearly for every new connection.
	vip := fmt.Sprintf("-d %s/32 -p %s -m %s --dport %d", b.svc.Spec.ClusterIP, proto, proto, b.port.Port)
	rules := []string{fmt.Sprintf("%s -j %s", vip, b.cfg.markMasqChain())}
	if b.cfg.ClusterCIDR.IsValid() {
		rules[0] = fmt.Sprintf("! -s %s %s -j %s", b.cfg.ClusterCIDR, vip, b.cfg.markMasqChain())
	}
	if affinity > 0 {
		for _, sep := range seps {
			rules = append(rules, fmt.Sprintf("-m recent --rcheck --seconds %d --reap --name %s --mask 255.255.255.255 --rsource -j %s", affinity, sep, sep))
		}
	}
	for i, sep := range seps {
		if n := len(seps) - i; n > 1 {
			rules = append(rules, fmt.Sprintf("-m statistic --mode random --probability %s -j %s", probability(n), sep))
		} else {
			rules = append(rules, "-j "+sep)
		}
	}
	b.rs.NAT[name] = rules
}

func probability(n int) string { return strconv.FormatFloat(1/float64(n), 'f', 10, 64) }

// ExtraServiceCIDRs are the IPv4 ranges of the ServiceCIDR objects beyond own (the node's service
// range), sorted and without repeats: those being deleted too, whose cluster IPs are served until
// they go. It is pure.
func ExtraServiceCIDRs(cidrs []*networkingv1.ServiceCIDR, own netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		for _, s := range c.Spec.CIDRs {
			p, err := netip.ParsePrefix(s)
			if err != nil || !p.Addr().Is4() {
				continue
			}
			p = p.Masked()
			if own.IsValid() && own.Bits() <= p.Bits() && own.Contains(p.Addr()) {
				continue // inside the service range, refused already
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}
