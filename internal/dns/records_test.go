package dns

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Builders for the objects a View holds.

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

type svcBuilder struct{ s *corev1.Service }

func service(ns, name string) svcBuilder {
	return svcBuilder{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}}
}

func (b svcBuilder) ips(ips ...string) svcBuilder {
	b.s.Spec.ClusterIP, b.s.Spec.ClusterIPs = ips[0], ips
	return b
}

func (b svcBuilder) headless() svcBuilder { return b.ips(corev1.ClusterIPNone) }

func (b svcBuilder) port(name string, proto corev1.Protocol, port int32) svcBuilder {
	b.s.Spec.Ports = append(b.s.Spec.Ports, corev1.ServicePort{Name: name, Protocol: proto, Port: port})
	return b
}

func (b svcBuilder) externalName(target string) svcBuilder {
	b.s.Spec.Type, b.s.Spec.ExternalName = corev1.ServiceTypeExternalName, target
	return b
}

func (b svcBuilder) publishNotReady() svcBuilder {
	b.s.Spec.PublishNotReadyAddresses = true
	return b
}

func (b svcBuilder) obj() *corev1.Service { return b.s }

type sliceBuilder struct{ s *discoveryv1.EndpointSlice }

func slice(ns, svc, name string) sliceBuilder {
	return sliceBuilder{&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}}
}

func (b sliceBuilder) v6() sliceBuilder {
	b.s.AddressType = discoveryv1.AddressTypeIPv6
	return b
}

func (b sliceBuilder) port(name string, proto corev1.Protocol, port int32) sliceBuilder {
	b.s.Ports = append(b.s.Ports, discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(port)})
	return b
}

// ep adds an endpoint: hostname may be empty.
func (b sliceBuilder) ep(ip, hostname string, ready bool) sliceBuilder {
	e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
	if hostname != "" {
		e.Hostname = ptr.To(hostname)
	}
	b.s.Endpoints = append(b.s.Endpoints, e)
	return b
}

func (b sliceBuilder) obj() *discoveryv1.EndpointSlice { return b.s }

// testView is a small cluster: a ClusterIP service, a headless StatefulSet service, a headless
// service without hostnames, ExternalNames and a dual-stack service.
func testView(t testing.TB) View {
	t.Helper()
	v, err := NewIndexerView(
		namespace("default"), namespace("kube-system"), namespace("team"),
		service("default", "kubernetes").ips("10.43.0.1").port("https", corev1.ProtocolTCP, 443).obj(),
		service("team", "web").ips("10.43.0.20").port("http", corev1.ProtocolTCP, 80).port("", corev1.ProtocolUDP, 9000).obj(),
		slice("team", "web", "web-abc").port("http", corev1.ProtocolTCP, 8080).ep("10.42.0.5", "", true).obj(),
		service("team", "db").headless().port("pg", corev1.ProtocolTCP, 5432).obj(),
		slice("team", "db", "db-1").port("pg", corev1.ProtocolTCP, 5432).
			ep("10.42.0.11", "db-0", true).ep("10.42.0.12", "db-1", true).ep("10.42.0.13", "db-2", false).obj(),
		service("team", "raw").headless().port("dns", corev1.ProtocolUDP, 53).obj(),
		slice("team", "raw", "raw-1").port("dns", corev1.ProtocolUDP, 5353).ep("10.42.0.21", "", true).obj(),
		slice("team", "raw", "raw-2").v6().port("dns", corev1.ProtocolUDP, 5353).ep("fd00::21", "", true).obj(),
		service("team", "empty").headless().obj(),
		service("team", "notready").headless().publishNotReady().obj(),
		slice("team", "notready", "nr-1").ep("10.42.0.31", "nr-0", false).obj(),
		service("team", "ext").externalName("example.org").obj(),
		service("team", "alias").externalName("web.team.svc.cluster.local").obj(),
		service("team", "loop-a").externalName("loop-b.team.svc.cluster.local").obj(),
		service("team", "loop-b").externalName("loop-a.team.svc.cluster.local").obj(),
		service("team", "dual").ips("10.43.0.30", "fd00:43::30").obj(),
	)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rrs prints records without TTL and class: "name TYPE data".
func rrs(in []dns.RR) []string {
	var out []string
	for _, rr := range in {
		f := strings.Fields(rr.String())
		out = append(out, f[0]+" "+strings.Join(f[3:], " "))
	}
	slices.Sort(out)
	return out
}

func TestResolve(t *testing.T) {
	v := testView(t)
	z := Zone{Domain: "cluster.local", Serial: 42}
	const (
		nx   = dns.RcodeNameError
		ok   = dns.RcodeSuccess
		none = -1 // forwarded
	)
	tests := []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
		extra []string
	}{
		{"kubernetes.default.svc.cluster.local.", dns.TypeA, ok, []string{"kubernetes.default.svc.cluster.local. A 10.43.0.1"}, nil},
		{"KUBERNETES.Default.svc.Cluster.Local", dns.TypeA, ok, []string{"kubernetes.default.svc.cluster.local. A 10.43.0.1"}, nil},
		{"kubernetes.default.svc.cluster.local.", dns.TypeAAAA, ok, nil, nil},
		{"kubernetes.default.svc.cluster.local.", dns.TypeTXT, ok, nil, nil},
		{"web.team.svc.cluster.local.", dns.TypeSRV, ok,
			[]string{"web.team.svc.cluster.local. SRV 0 100 80 web.team.svc.cluster.local.", "web.team.svc.cluster.local. SRV 0 100 9000 web.team.svc.cluster.local."},
			[]string{"web.team.svc.cluster.local. A 10.43.0.20"}},
		{"dual.team.svc.cluster.local.", dns.TypeAAAA, ok, []string{"dual.team.svc.cluster.local. AAAA fd00:43::30"}, nil},
		{"dual.team.svc.cluster.local.", dns.TypeA, ok, []string{"dual.team.svc.cluster.local. A 10.43.0.30"}, nil},
		// Negative answers: NXDOMAIN for names that do not exist, NODATA for those that do.
		{"nosuch.default.svc.cluster.local.", dns.TypeA, nx, nil, nil},
		{"default.svc.cluster.local.", dns.TypeA, ok, nil, nil},
		{"nosuchns.svc.cluster.local.", dns.TypeA, nx, nil, nil},
		{"svc.cluster.local.", dns.TypeA, ok, nil, nil},
		{"cluster.local.", dns.TypeA, ok, nil, nil},
		{"cluster.local.", dns.TypeSOA, ok, []string{"cluster.local. SOA ns.dns.cluster.local. hostmaster.cluster.local. 42 7200 1800 86400 5"}, nil},
		{"cluster.local.", dns.TypeNS, ok, []string{"cluster.local. NS ns.dns.cluster.local."}, nil},
		{"what.cluster.local.", dns.TypeA, nx, nil, nil},
		{"a.b.c.d.e.svc.cluster.local.", dns.TypeA, nx, nil, nil},
		// Headless: every ready endpoint; per-endpoint names by hostname, else by dashed address.
		{"db.team.svc.cluster.local.", dns.TypeA, ok, []string{"db.team.svc.cluster.local. A 10.42.0.11", "db.team.svc.cluster.local. A 10.42.0.12"}, nil},
		{"db-1.db.team.svc.cluster.local.", dns.TypeA, ok, []string{"db-1.db.team.svc.cluster.local. A 10.42.0.12"}, nil},
		{"db-2.db.team.svc.cluster.local.", dns.TypeA, nx, nil, nil},
		{"db-0.db.team.svc.cluster.local.", dns.TypeAAAA, ok, nil, nil},
		{"10-42-0-21.raw.team.svc.cluster.local.", dns.TypeA, ok, []string{"10-42-0-21.raw.team.svc.cluster.local. A 10.42.0.21"}, nil},
		{"fd00--21.raw.team.svc.cluster.local.", dns.TypeAAAA, ok, []string{"fd00--21.raw.team.svc.cluster.local. AAAA fd00::21"}, nil},
		{"raw.team.svc.cluster.local.", dns.TypeAAAA, ok, []string{"raw.team.svc.cluster.local. AAAA fd00::21"}, nil},
		{"empty.team.svc.cluster.local.", dns.TypeA, ok, nil, nil},
		{"notready.team.svc.cluster.local.", dns.TypeA, ok, []string{"notready.team.svc.cluster.local. A 10.42.0.31"}, nil},
		{"10-42-0-5.web.team.svc.cluster.local.", dns.TypeA, nx, nil, nil},
		// SRV for named ports.
		{"_https._tcp.kubernetes.default.svc.cluster.local.", dns.TypeSRV, ok,
			[]string{"_https._tcp.kubernetes.default.svc.cluster.local. SRV 0 100 443 kubernetes.default.svc.cluster.local."},
			[]string{"kubernetes.default.svc.cluster.local. A 10.43.0.1"}},
		{"_HTTPS._TCP.kubernetes.default.svc.cluster.local.", dns.TypeSRV, ok,
			[]string{"_https._tcp.kubernetes.default.svc.cluster.local. SRV 0 100 443 kubernetes.default.svc.cluster.local."},
			[]string{"kubernetes.default.svc.cluster.local. A 10.43.0.1"}},
		{"_https._udp.kubernetes.default.svc.cluster.local.", dns.TypeSRV, nx, nil, nil},
		{"_http._tcp.kubernetes.default.svc.cluster.local.", dns.TypeSRV, nx, nil, nil},
		{"_https._tcp.kubernetes.default.svc.cluster.local.", dns.TypeA, ok, nil, nil},
		{"_tcp.kubernetes.default.svc.cluster.local.", dns.TypeSRV, ok, nil, nil},
		{"_udp.kubernetes.default.svc.cluster.local.", dns.TypeSRV, nx, nil, nil},
		{"_pg._tcp.db.team.svc.cluster.local.", dns.TypeSRV, ok,
			[]string{"_pg._tcp.db.team.svc.cluster.local. SRV 0 50 5432 db-0.db.team.svc.cluster.local.", "_pg._tcp.db.team.svc.cluster.local. SRV 0 50 5432 db-1.db.team.svc.cluster.local."},
			[]string{"db-0.db.team.svc.cluster.local. A 10.42.0.11", "db-1.db.team.svc.cluster.local. A 10.42.0.12"}},
		{"_dns._udp.raw.team.svc.cluster.local.", dns.TypeSRV, ok,
			[]string{"_dns._udp.raw.team.svc.cluster.local. SRV 0 50 5353 10-42-0-21.raw.team.svc.cluster.local.", "_dns._udp.raw.team.svc.cluster.local. SRV 0 50 5353 fd00--21.raw.team.svc.cluster.local."},
			[]string{"10-42-0-21.raw.team.svc.cluster.local. A 10.42.0.21", "fd00--21.raw.team.svc.cluster.local. AAAA fd00::21"}},
		// ExternalName: a CNAME; inside the zone it is followed once.
		{"ext.team.svc.cluster.local.", dns.TypeA, ok, []string{"ext.team.svc.cluster.local. CNAME example.org."}, nil},
		{"ext.team.svc.cluster.local.", dns.TypeCNAME, ok, []string{"ext.team.svc.cluster.local. CNAME example.org."}, nil},
		{"alias.team.svc.cluster.local.", dns.TypeA, ok, []string{"alias.team.svc.cluster.local. CNAME web.team.svc.cluster.local.", "web.team.svc.cluster.local. A 10.43.0.20"}, nil},
		{"loop-a.team.svc.cluster.local.", dns.TypeA, ok, []string{"loop-a.team.svc.cluster.local. CNAME loop-b.team.svc.cluster.local.", "loop-b.team.svc.cluster.local. CNAME loop-a.team.svc.cluster.local."}, nil},
		// Pods, "insecure": the address in the name, in an existing namespace.
		{"10-42-0-99.team.pod.cluster.local.", dns.TypeA, ok, []string{"10-42-0-99.team.pod.cluster.local. A 10.42.0.99"}, nil},
		{"10-42-0-99.team.pod.cluster.local.", dns.TypeAAAA, ok, nil, nil},
		{"fd00--99.team.pod.cluster.local.", dns.TypeAAAA, ok, []string{"fd00--99.team.pod.cluster.local. AAAA fd00::99"}, nil},
		{"10-42-0-99.nosuchns.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"10-42-0.team.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"10-42-0-999.team.pod.cluster.local.", dns.TypeA, nx, nil, nil},
		{"team.pod.cluster.local.", dns.TypeA, ok, nil, nil},
		// Reverse names of the cluster's addresses; others go upstream.
		{"1.0.43.10.in-addr.arpa.", dns.TypePTR, ok, []string{"1.0.43.10.in-addr.arpa. PTR kubernetes.default.svc.cluster.local."}, nil},
		{"12.0.42.10.in-addr.arpa.", dns.TypePTR, ok, []string{"12.0.42.10.in-addr.arpa. PTR db-1.db.team.svc.cluster.local."}, nil},
		{"5.0.42.10.in-addr.arpa.", dns.TypePTR, none, nil, nil},
		{"0.3.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.3.4.0.0.0.0.d.f.ip6.arpa.", dns.TypePTR, ok,
			[]string{"0.3.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.3.4.0.0.0.0.d.f.ip6.arpa. PTR dual.team.svc.cluster.local."}, nil},
		{"9.9.9.9.in-addr.arpa.", dns.TypePTR, none, nil, nil},
		// Not ours.
		{"example.org.", dns.TypeA, none, nil, nil},
		{"local.", dns.TypeA, none, nil, nil},
		{"xcluster.local.", dns.TypeA, none, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+dns.TypeToString[tt.qtype], func(t *testing.T) {
			got := z.Resolve(v, tt.name, tt.qtype)
			if tt.rcode == none {
				if !got.Forward {
					t.Fatalf("answered %+v, want forwarded", got)
				}
				return
			}
			if got.Forward {
				t.Fatal("forwarded")
			}
			if got.Rcode != tt.rcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[got.Rcode], dns.RcodeToString[tt.rcode])
			}
			if g := rrs(got.Answer); !slices.Equal(g, tt.want) {
				t.Errorf("answer\n%q\nwant\n%q", g, tt.want)
			}
			if g := rrs(got.Extra); !slices.Equal(g, tt.extra) {
				t.Errorf("extra\n%q\nwant\n%q", g, tt.extra)
			}
			// Negative answers carry the zone's SOA (minimum 5 s); positive ones do not.
			negative := len(got.Answer) == 0
			if negative != (len(got.Ns) == 1) {
				t.Errorf("authority %v for answer %v", got.Ns, got.Answer)
			}
			if negative && tt.name != "cluster.local." {
				if soa, ok := got.Ns[0].(*dns.SOA); !ok || soa.Minttl != DefaultTTL || soa.Hdr.Name != "cluster.local." {
					t.Errorf("authority %v", got.Ns)
				}
			}
			for _, rr := range append(got.Answer, got.Extra...) {
				if rr.Header().Ttl != DefaultTTL {
					t.Errorf("TTL of %v", rr)
				}
			}
		})
	}
}

func TestResolveChasesExternalTargets(t *testing.T) {
	z := Zone{Domain: "cluster.local"}
	got := z.Resolve(testView(t), "ext.team.svc.cluster.local.", dns.TypeA)
	if got.Chase != "example.org." {
		t.Errorf("chase %q", got.Chase)
	}
	if got = z.Resolve(testView(t), "ext.team.svc.cluster.local.", dns.TypeCNAME); got.Chase != "" {
		t.Errorf("a CNAME question chases %q", got.Chase)
	}
}

func TestOtherDomainAndTTL(t *testing.T) {
	v, err := NewIndexerView(namespace("default"), service("default", "kubernetes").ips("10.96.0.1").obj())
	if err != nil {
		t.Fatal(err)
	}
	z := Zone{Domain: "corp.example", TTL: 30}
	got := z.Resolve(v, "kubernetes.default.svc.corp.example.", dns.TypeA)
	if g := rrs(got.Answer); !slices.Equal(g, []string{"kubernetes.default.svc.corp.example. A 10.96.0.1"}) || got.Answer[0].Header().Ttl != 30 {
		t.Errorf("answer %v", got.Answer)
	}
	if got := z.Resolve(v, "kubernetes.default.svc.cluster.local.", dns.TypeA); !got.Forward {
		t.Errorf("another domain answered: %+v", got)
	}
}

func TestDashedIP(t *testing.T) {
	for label, want := range map[string]string{
		"10-42-0-5": "10.42.0.5", "fd00--1": "fd00::1", "0-0-0-0": "0.0.0.0",
		"10-42-0": "", "a-b-c-d": "", "fd00-1": "", "10-42-0-5-1": "", "": "", "--": "::", "1-2-3-4-5-6-7-8": "1:2:3:4:5:6:7:8",
	} {
		ip, ok := dashedIP(label)
		if want == "" {
			if ok {
				t.Errorf("%q read as %v", label, ip)
			}
			continue
		}
		if !ok || ip != netip.MustParseAddr(want) {
			t.Errorf("%q = %v %v, want %s", label, ip, ok, want)
		}
	}
}

func TestReverseIP(t *testing.T) {
	for name, want := range map[string]string{
		"1.0.43.10.in-addr.arpa.": "10.43.0.1", "01.0.43.10.in-addr.arpa.": "", "256.0.43.10.in-addr.arpa.": "",
		"0.43.10.in-addr.arpa.": "", "in-addr.arpa.": "", "x.0.43.10.in-addr.arpa.": "",
		"1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.": "fd00::1",
		"1.0.0.ip6.arpa.": "",
	} {
		ip, ok := reverseIP(name)
		if want == "" {
			if ok {
				t.Errorf("%q read as %v", name, ip)
			}
			continue
		}
		if !ok || ip != netip.MustParseAddr(want) {
			t.Errorf("%q = %v %v, want %s", name, ip, ok, want)
		}
	}
}
