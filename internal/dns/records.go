package dns

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// DefaultTTL is the TTL of every cluster record and of the zone's negative answers, as CoreDNS's
// kubernetes plugin has it.
const DefaultTTL = 5

// Zone answers the cluster domain from a View. Its methods are pure: the same View and question
// give the same Result.
type Zone struct {
	// Domain is the cluster domain ("cluster.local").
	Domain string
	// TTL of records and of negative answers (the SOA minimum); 0 means DefaultTTL.
	TTL uint32
	// Serial is the SOA serial.
	Serial uint32
}

// Result is Resolve's decision about one question.
type Result struct {
	// Forward: the name is not the cluster's; ask the upstream resolvers.
	Forward bool
	Rcode   int
	Answer  []dns.RR
	// Extra holds the addresses of SRV targets.
	Extra []dns.RR
	// Ns holds the SOA of a negative answer.
	Ns []dns.RR
	// Chase is a CNAME target outside the cluster domain that the server resolves upstream and
	// appends (pods' stub resolvers do not follow a lone CNAME).
	Chase string
}

func (z Zone) origin() string { return dns.Fqdn(strings.ToLower(z.Domain)) }

func (z Zone) ttl() uint32 {
	if z.TTL == 0 {
		return DefaultTTL
	}
	return z.TTL
}

func (z Zone) hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: z.ttl()}
}

// SOA is the cluster zone's SOA record.
func (z Zone) SOA() *dns.SOA {
	o := z.origin()
	return &dns.SOA{Hdr: z.hdr(o, dns.TypeSOA), Ns: "ns.dns." + o, Mbox: "hostmaster." + o,
		Serial: z.Serial, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: z.ttl()}
}

func (z Zone) nxdomain() Result {
	return Result{Rcode: dns.RcodeNameError, Ns: []dns.RR{z.SOA()}}
}

func (z Zone) nodata() Result { return Result{Rcode: dns.RcodeSuccess, Ns: []dns.RR{z.SOA()}} }

// answer is a positive answer, or NODATA when the name exists without records of the type.
func (z Zone) answer(rrs, extra []dns.RR) Result {
	if len(rrs) == 0 {
		return z.nodata()
	}
	return Result{Rcode: dns.RcodeSuccess, Answer: rrs, Extra: extra}
}

// Resolve answers qname (any case, with or without the final dot) of type qtype.
func (z Zone) Resolve(v View, qname string, qtype uint16) Result {
	return z.resolve(v, qname, qtype, true)
}

// resolve is Resolve; follow says whether an ExternalName inside the zone is followed (once, so
// ExternalNames pointing at each other cannot loop).
func (z Zone) resolve(v View, qname string, qtype uint16, follow bool) Result {
	name := dns.Fqdn(strings.ToLower(qname))
	if ip, ok := reverseIP(name); ok {
		return z.reverse(v, name, ip, qtype)
	}
	origin := z.origin()
	if !dns.IsSubDomain(origin, name) {
		return Result{Forward: true}
	}
	rest := strings.TrimSuffix(strings.TrimSuffix(name, origin), ".")
	var labels []string
	if rest != "" {
		labels = strings.Split(rest, ".")
	}
	n := len(labels)
	switch {
	case n == 0:
		switch qtype {
		case dns.TypeSOA:
			return z.answer([]dns.RR{z.SOA()}, nil)
		case dns.TypeNS:
			return z.answer([]dns.RR{&dns.NS{Hdr: z.hdr(name, dns.TypeNS), Ns: "ns.dns." + origin}}, nil)
		}
		return z.nodata()
	case labels[n-1] == "svc":
		return z.resolveSvc(v, name, labels[:n-1], qtype, follow)
	case labels[n-1] == "pod":
		return z.resolvePod(v, name, labels[:n-1], qtype)
	}
	return z.nxdomain()
}

// namespaceLevel answers svc.<domain> or pod.<domain> (no labels: NODATA) and <ns>.svc.<domain>
// or <ns>.pod.<domain> (one label: NODATA for an existing namespace, else NXDOMAIN).
func (z Zone) namespaceLevel(v View, labels []string) Result {
	if len(labels) == 0 || v.NamespaceExists(labels[0]) {
		return z.nodata()
	}
	return z.nxdomain()
}

// resolveSvc answers names under svc.<domain>; labels are those before "svc".
func (z Zone) resolveSvc(v View, name string, labels []string, qtype uint16, follow bool) Result {
	if len(labels) < 2 {
		return z.namespaceLevel(v, labels)
	}
	ns, svcName := labels[len(labels)-1], labels[len(labels)-2]
	svc := v.Service(ns, svcName)
	if svc == nil {
		return z.nxdomain()
	}
	svcFQDN := svcName + "." + ns + ".svc." + z.origin()
	switch len(labels) {
	case 2:
		return z.serviceRecords(v, svc, svcFQDN, qtype, follow)
	case 3:
		if strings.HasPrefix(labels[0], "_") {
			// _<proto>.<svc>: an empty non-terminal when the service has a port of that protocol.
			for _, p := range svc.Spec.Ports {
				if p.Name != "" && "_"+strings.ToLower(string(p.Protocol)) == labels[0] {
					return z.nodata()
				}
			}
			return z.nxdomain()
		}
		return z.endpointRecords(v, svc, svcFQDN, labels[0], qtype)
	case 4:
		if strings.HasPrefix(labels[0], "_") && strings.HasPrefix(labels[1], "_") {
			return z.srvRecords(v, svc, svcFQDN, labels[0][1:], labels[1][1:], name, qtype)
		}
	}
	return z.nxdomain()
}

// serviceRecords answers <svc>.<ns>.svc.<domain>.
func (z Zone) serviceRecords(v View, svc *corev1.Service, fqdn string, qtype uint16, follow bool) Result {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		target := dns.Fqdn(strings.ToLower(svc.Spec.ExternalName))
		if _, ok := dns.IsDomainName(target); !ok || svc.Spec.ExternalName == "" {
			return z.nodata()
		}
		r := Result{Rcode: dns.RcodeSuccess, Answer: []dns.RR{&dns.CNAME{Hdr: z.hdr(fqdn, dns.TypeCNAME), Target: target}}}
		if qtype == dns.TypeCNAME {
			return r
		}
		if dns.IsSubDomain(z.origin(), target) {
			if !follow {
				return r
			}
			// One level inside the zone; a chain of ExternalNames stops here (no loops).
			inner := z.resolve(v, target, qtype, false)
			if inner.Rcode == dns.RcodeSuccess {
				r.Answer = append(r.Answer, inner.Answer...)
				r.Extra, r.Chase = inner.Extra, inner.Chase
			}
			return r
		}
		r.Chase = target
		return r
	}
	if isHeadless(svc) {
		var rrs []dns.RR
		for _, ep := range readyEndpoints(v, svc) {
			if rr := z.addressRR(fqdn, ep.ip, qtype); rr != nil {
				rrs = append(rrs, rr)
			}
		}
		if qtype == dns.TypeSRV {
			return z.srvForPorts(v, svc, fqdn, fqdn, "", "")
		}
		return z.answer(rrs, nil)
	}
	if qtype == dns.TypeSRV {
		return z.srvForPorts(v, svc, fqdn, fqdn, "", "")
	}
	var rrs []dns.RR
	for _, ip := range serviceIPs(svc) {
		if rr := z.addressRR(fqdn, ip, qtype); rr != nil {
			rrs = append(rrs, rr)
		}
	}
	return z.answer(rrs, nil)
}

// endpointRecords answers <endpoint>.<svc>.<ns>.svc.<domain> of a headless service: the endpoint
// whose hostname, or else dashed address, is label.
func (z Zone) endpointRecords(v View, svc *corev1.Service, svcFQDN, label string, qtype uint16) Result {
	if !isHeadless(svc) {
		return z.nxdomain()
	}
	var rrs []dns.RR
	found := false
	for _, ep := range readyEndpoints(v, svc) {
		if ep.label() != label {
			continue
		}
		found = true
		if rr := z.addressRR(label+"."+svcFQDN, ep.ip, qtype); rr != nil {
			rrs = append(rrs, rr)
		}
	}
	if !found {
		return z.nxdomain()
	}
	return z.answer(rrs, nil)
}

// srvRecords answers _<port>._<proto>.<svc>.<ns>.svc.<domain>.
func (z Zone) srvRecords(v View, svc *corev1.Service, svcFQDN, port, proto, name string, qtype uint16) Result {
	r := z.srvForPorts(v, svc, svcFQDN, name, port, proto)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
		return z.nxdomain()
	}
	if qtype != dns.TypeSRV && qtype != dns.TypeANY {
		return z.nodata()
	}
	return r
}

// srvForPorts is one SRV record per matching port (all ports when port is ""), pointing at the
// service name, or at each ready endpoint's name for a headless service.
func (z Zone) srvForPorts(v View, svc *corev1.Service, svcFQDN, owner, port, proto string) Result {
	var rrs, extra []dns.RR
	headless := isHeadless(svc)
	var eps []endpoint
	if headless {
		eps = readyEndpoints(v, svc)
	}
	for _, p := range svc.Spec.Ports {
		if port != "" && (p.Name == "" || strings.ToLower(p.Name) != port || strings.ToLower(string(p.Protocol)) != proto) {
			continue
		}
		if !headless {
			rrs = append(rrs, &dns.SRV{Hdr: z.hdr(owner, dns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(p.Port), Target: svcFQDN})
			for _, ip := range serviceIPs(svc) {
				if rr := z.addressRR(svcFQDN, ip, dns.TypeANY); rr != nil {
					extra = append(extra, rr)
				}
			}
			continue
		}
		var matched []endpoint
		for _, ep := range eps {
			if ep.ports[portKey(p.Name, p.Protocol)] != 0 {
				matched = append(matched, ep)
			}
		}
		for _, ep := range matched {
			target := ep.label() + "." + svcFQDN
			rrs = append(rrs, &dns.SRV{Hdr: z.hdr(owner, dns.TypeSRV), Priority: 0, Weight: uint16(100 / len(matched)),
				Port: uint16(ep.ports[portKey(p.Name, p.Protocol)]), Target: target})
			extra = append(extra, z.addressRR(target, ep.ip, dns.TypeANY))
		}
	}
	return z.answer(dedupe(rrs), dedupe(extra))
}

// resolvePod answers <a-b-c-d>.<ns>.pod.<domain> as CoreDNS's "pods insecure": the address
// spelled in the name, for any existing namespace, without looking for the pod.
func (z Zone) resolvePod(v View, name string, labels []string, qtype uint16) Result {
	if len(labels) < 2 {
		return z.namespaceLevel(v, labels)
	}
	if len(labels) > 2 {
		return z.nxdomain()
	}
	if !v.NamespaceExists(labels[1]) {
		return z.nxdomain()
	}
	ip, ok := dashedIP(labels[0])
	if !ok {
		return z.nxdomain()
	}
	var rrs []dns.RR
	if rr := z.addressRR(name, ip, qtype); rr != nil {
		rrs = append(rrs, rr)
	}
	return z.answer(rrs, nil)
}

// reverse answers PTR queries for service cluster IPs and headless services' endpoint addresses;
// other addresses are forwarded.
func (z Zone) reverse(v View, name string, ip netip.Addr, qtype uint16) Result {
	var rrs []dns.RR
	for _, svc := range v.ServicesByIP(ip) {
		rrs = append(rrs, &dns.PTR{Hdr: z.hdr(name, dns.TypePTR), Ptr: svc.Name + "." + svc.Namespace + ".svc." + z.origin()})
	}
	for _, s := range v.SlicesByIP(ip) {
		svcName := s.Labels[discoveryv1.LabelServiceName]
		svc := v.Service(s.Namespace, svcName)
		if svc == nil || !isHeadless(svc) {
			continue
		}
		for _, ep := range sliceEndpoints(svc, s) {
			if ep.ip == ip {
				rrs = append(rrs, &dns.PTR{Hdr: z.hdr(name, dns.TypePTR), Ptr: ep.label() + "." + svcName + "." + s.Namespace + ".svc." + z.origin()})
			}
		}
	}
	if len(rrs) == 0 {
		return Result{Forward: true}
	}
	if qtype != dns.TypePTR && qtype != dns.TypeANY {
		return Result{Rcode: dns.RcodeSuccess}
	}
	return Result{Rcode: dns.RcodeSuccess, Answer: dedupe(rrs)}
}

// addressRR is an A or AAAA record of ip if it fits qtype (ANY takes both), else nil.
func (z Zone) addressRR(name string, ip netip.Addr, qtype uint16) dns.RR {
	switch {
	case ip.Is4() && (qtype == dns.TypeA || qtype == dns.TypeANY):
		return &dns.A{Hdr: z.hdr(name, dns.TypeA), A: ip.AsSlice()}
	case ip.Is6() && (qtype == dns.TypeAAAA || qtype == dns.TypeANY):
		return &dns.AAAA{Hdr: z.hdr(name, dns.TypeAAAA), AAAA: ip.AsSlice()}
	}
	return nil
}

func isHeadless(svc *corev1.Service) bool { return svc.Spec.ClusterIP == corev1.ClusterIPNone }

// serviceIPs are a (non-headless) service's cluster IPs.
func serviceIPs(svc *corev1.Service) []netip.Addr {
	var out []netip.Addr
	for _, s := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
		if ip, err := netip.ParseAddr(s); err == nil && !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}

// endpoint is one address of a service's endpoint with its ports by "<name>/<protocol>".
type endpoint struct {
	ip       netip.Addr
	hostname string
	ports    map[string]int32
}

func portKey(name string, proto corev1.Protocol) string {
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return strings.ToLower(name) + "/" + string(proto)
}

// label is the endpoint's name under its service: its hostname, else its dashed address
// (10-42-0-5), as CoreDNS names them.
func (e endpoint) label() string {
	if e.hostname != "" {
		return e.hostname
	}
	return strings.NewReplacer(".", "-", ":", "-").Replace(e.ip.String())
}

// readyEndpoints are the service's endpoints that DNS publishes: the ready ones, or all with
// publishNotReadyAddresses.
func readyEndpoints(v View, svc *corev1.Service) []endpoint {
	var out []endpoint
	for _, s := range v.Slices(svc.Namespace, svc.Name) {
		out = append(out, sliceEndpoints(svc, s)...)
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		if c := a.ip.Compare(b.ip); c != 0 {
			return c
		}
		return strings.Compare(a.hostname, b.hostname)
	})
	return slices.CompactFunc(out, func(a, b endpoint) bool { return a.ip == b.ip && a.hostname == b.hostname })
}

func sliceEndpoints(svc *corev1.Service, s *discoveryv1.EndpointSlice) []endpoint {
	if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
		return nil
	}
	ports := map[string]int32{}
	for _, p := range s.Ports {
		if p.Port == nil {
			continue
		}
		name, proto := "", corev1.ProtocolTCP
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		ports[portKey(name, proto)] = *p.Port
	}
	var out []endpoint
	for _, ep := range s.Endpoints {
		ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
		if !ready && !svc.Spec.PublishNotReadyAddresses {
			continue
		}
		host := ""
		if ep.Hostname != nil {
			host = strings.ToLower(*ep.Hostname)
		}
		for _, a := range ep.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				out = append(out, endpoint{ip: ip, hostname: host, ports: ports})
			}
		}
	}
	return out
}

// dashedIP reads a pod name label: 10-42-0-5, or an IPv6 address with dashes for colons.
func dashedIP(label string) (netip.Addr, bool) {
	s := strings.ReplaceAll(label, "-", ":")
	if strings.Count(label, "-") == 3 {
		s = strings.ReplaceAll(label, "-", ".")
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" || (ip.Is4() != (strings.Count(label, "-") == 3)) {
		return netip.Addr{}, false
	}
	return ip, true
}

// reverseIP reads a full in-addr.arpa or ip6.arpa name.
func reverseIP(name string) (netip.Addr, bool) {
	switch {
	case strings.HasSuffix(name, ".in-addr.arpa."):
		parts := strings.Split(strings.TrimSuffix(name, ".in-addr.arpa."), ".")
		if len(parts) != 4 {
			return netip.Addr{}, false
		}
		var b [4]byte
		for i, p := range parts {
			n, err := strconv.ParseUint(p, 10, 8)
			if err != nil || (len(p) > 1 && p[0] == '0') {
				return netip.Addr{}, false
			}
			b[3-i] = byte(n)
		}
		return netip.AddrFrom4(b), true
	case strings.HasSuffix(name, ".ip6.arpa."):
		parts := strings.Split(strings.TrimSuffix(name, ".ip6.arpa."), ".")
		if len(parts) != 32 {
			return netip.Addr{}, false
		}
		var b [16]byte
		for i, p := range parts {
			n, err := strconv.ParseUint(p, 16, 8)
			if err != nil || len(p) != 1 {
				return netip.Addr{}, false
			}
			nibble := 31 - i
			b[nibble/2] |= byte(n) << (4 * (1 - nibble%2))
		}
		return netip.AddrFrom16(b), true
	}
	return netip.Addr{}, false
}

func dedupe(rrs []dns.RR) []dns.RR {
	var out []dns.RR
	for _, rr := range rrs {
		if rr == nil || slices.ContainsFunc(out, func(o dns.RR) bool { return dns.IsDuplicate(o, rr) }) {
			continue
		}
		out = append(out, rr)
	}
	return out
}
