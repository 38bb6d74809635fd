package proxy

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// UDPPort is what the conntrack flush needs to know of one UDP service port: the addresses it
// answers on (cluster IP, external and load-balancer IPs), its NodePort, and the endpoint
// addresses its rules may send to.
type UDPPort struct {
	Addrs     []string
	NodePort  int32
	Endpoints []string
}

// UDPState is every proxied UDP service port, keyed "ns/name:port".
type UDPState map[string]UDPPort

// BuildUDPState is the UDP part of what Build programs (pure).
func BuildUDPState(cfg Config, services []*corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) UDPState {
	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range endpointSlices {
		if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
			bySvc[s.Namespace+"/"+name] = append(bySvc[s.Namespace+"/"+name], s)
		}
	}
	out := UDPState{}
	for _, svc := range services {
		if !proxied(svc) {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		for _, port := range svc.Spec.Ports {
			if port.Protocol != corev1.ProtocolUDP {
				continue
			}
			p := UDPPort{Addrs: []string{svc.Spec.ClusterIP}}
			for _, ip := range svc.Spec.ExternalIPs {
				if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
					p.Addrs = append(p.Addrs, a.String())
				}
			}
			for _, ing := range svc.Status.LoadBalancer.Ingress {
				if a, err := netip.ParseAddr(ing.IP); err == nil && a.Is4() {
					p.Addrs = append(p.Addrs, a.String())
				}
			}
			if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				p.NodePort = port.NodePort
			}
			// Every endpoint any of the port's chains may DNAT to: the cluster-wide choice, and
			// the local one (the same addresses or a subset).
			for _, e := range selectEndpoints(endpointsFor(cfg.NodeName, port, bySvc[key]), false) {
				if !slices.Contains(p.Endpoints, e.ip) {
					p.Endpoints = append(p.Endpoints, e.ip)
				}
			}
			slices.Sort(p.Endpoints)
			out[key+":"+port.Name] = p
		}
	}
	return out
}

// ConntrackFlush is one `conntrack -D` to run: UDP entries to OrigDst (or to the node's DPort)
// that were NATed to DstNAT, or, without DstNAT, every UDP entry to OrigDst.
type ConntrackFlush struct {
	OrigDst string
	DPort   int32
	DstNAT  string
}

// Args are the conntrack arguments.
func (f ConntrackFlush) Args() []string {
	args := []string{"-D", "-p", "udp"}
	if f.OrigDst != "" {
		args = append(args, "--orig-dst", f.OrigDst)
	}
	if f.DPort != 0 {
		args = append(args, "--dport", strconv.Itoa(int(f.DPort)))
	}
	if f.DstNAT != "" {
		args = append(args, "--dst-nat", f.DstNAT)
	}
	return args
}

// StaleConntrack is what kube-proxy flushes after a sync (pure): for an endpoint a UDP port no
// longer uses, the entries NATed to it through each of the port's addresses and its NodePort (a
// UDP "connection" would otherwise keep going to the gone pod until its entry expires); for a
// port that had no endpoint and now has some, every entry to its addresses (packets sent while
// it was rejected left entries that would keep rejecting). A nil prev (the first sync) flushes
// nothing.
func StaleConntrack(prev, next UDPState) []ConntrackFlush {
	if prev == nil {
		return nil
	}
	var out []ConntrackFlush
	keys := make([]string, 0, len(prev)+len(next))
	for k := range prev {
		keys = append(keys, k)
	}
	for k := range next {
		if _, ok := prev[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	seen := map[ConntrackFlush]bool{}
	add := func(f ConntrackFlush) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, k := range keys {
		was, had := prev[k]
		now, has := next[k]
		for _, ep := range was.Endpoints {
			if has && slices.Contains(now.Endpoints, ep) {
				continue
			}
			for _, a := range was.Addrs {
				add(ConntrackFlush{OrigDst: a, DstNAT: ep})
			}
			if was.NodePort != 0 {
				add(ConntrackFlush{DPort: was.NodePort, DstNAT: ep})
			}
		}
		if has && len(now.Endpoints) > 0 && (!had || len(was.Endpoints) == 0) {
			for _, a := range now.Addrs {
				add(ConntrackFlush{OrigDst: a})
			}
		}
	}
	return out
}

// Flush runs the conntrack deletions; "0 flow entries" is not an error.
func (h Host) Flush(ctx context.Context, flushes []ConntrackFlush) error {
	for _, f := range flushes {
		if _, err := h.run(ctx, "", "conntrack", f.Args()...); err != nil && !strings.Contains(err.Error(), "0 flow entries") {
			return fmt.Errorf("conntrack flush: %w", err)
		}
	}
	return nil
}
