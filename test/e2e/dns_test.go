package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

const dnsStatefulSet = `apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: web, port: 8080, protocol: TCP}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: localhost/busybox:local
        command: [httpd, -f, -p, "8080"]
        ports: [{name: web, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  type: ExternalName
  externalName: upstream.example
`

// testHostAddress puts a fresh address from 172.31.0.0/16 on one end of a veth pair of its own
// (the kernel here has no dummy links; the pair is removed at cleanup), so the node can listen on
// port 53 of an address no other test uses.
func testHostAddress(t *testing.T) string {
	t.Helper()
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	link := "skdns" + hex.EncodeToString(suffix)
	n, err := rand.Int(rand.Reader, big.NewInt(250*250))
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("172.31.%d.%d", 1+n.Int64()/250, 2+n.Int64()%250)
	for _, args := range [][]string{
		{"link", "add", link, "type", "veth", "peer", "name", link + "p"},
		{"addr", "add", addr + "/32", "dev", link},
		{"link", "set", link, "up"},
		{"link", "set", link + "p", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			_ = exec.Command("ip", "link", "del", link).Run()
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "link" && args[1] == "add" {
			t.Cleanup(func() { _ = exec.Command("ip", "link", "del", link).Run() })
		}
	}
	return addr
}

// fakeResolver stands in for the node's resolvers on 127.0.0.1: upstream.example has an A record
// (TEST-NET address, never contacted), every other name is NXDOMAIN.
func fakeResolver(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if q := r.Question[0]; q.Name == "upstream.example." && q.Qtype == dns.TypeA {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 7)}}
		} else {
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: "example.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60}, Ns: "ns.example.", Mbox: "h.example.", Minttl: 30}}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

// ask sends one question to server over network and returns the answer's records as
// "name TYPE data" and the rcode.
func ask(server, network, name string, qtype uint16) ([]string, int, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := (&dns.Client{Net: network, Timeout: 3 * time.Second}).Exchange(m, server)
	if err != nil {
		return nil, 0, err
	}
	var out []string
	for _, rr := range r.Answer {
		f := strings.Fields(rr.String())
		out = append(out, f[0]+" "+strings.Join(f[3:], " "))
	}
	slices.Sort(out)
	if r.Rcode == dns.RcodeNameError && (len(r.Ns) == 0 || r.Ns[0].Header().Rrtype != dns.TypeSOA) {
		return out, r.Rcode, fmt.Errorf("NXDOMAIN without SOA: %v", r)
	}
	return out, r.Rcode, nil
}

// TestClusterDNS runs an all-in-one node on an address of its own and queries its DNS from the
// host at <address>:53: the kube-dns Service and its node endpoint, the kubernetes Service, a
// headless StatefulSet's names and SRV records, an ExternalName, NXDOMAIN, and forwarding to the
// (fake) upstream. From a pod through the kube-dns VIP only once this node has rules for it.
func TestClusterDNS(t *testing.T) {
	requireRuntime(t)
	addr := testHostAddress(t)
	upstream := fakeResolver(t)
	c := newWorkerCluster(t, "--bind-address", addr, "--dns-upstream", upstream)
	server := net.JoinHostPort(addr, "53")
	node := strings.TrimSpace(c.kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"))

	t.Run("kube-dns service and endpoints", func(t *testing.T) {
		out := c.kubectl("get", "service", "kube-dns", "-n", "kube-system", "-o",
			"jsonpath={.spec.clusterIP} {.spec.internalTrafficPolicy} {.spec.ports[*].name} {.spec.ports[*].protocol} {.metadata.labels.k8s-app}")
		mustContain(t, out, "10.43.0.10 Local dns dns-tcp UDP TCP kube-dns")
		eventually(t, 60*time.Second, func() error {
			out, err := c.kubectlErr("get", "endpointslices", "-n", "kube-system", "-l", "kubernetes.io/service-name=kube-dns", "-o",
				"jsonpath={range .items[*].endpoints[*]}{.addresses[0]} {.nodeName} {.conditions.ready}{end}")
			if err != nil || strings.TrimSpace(out) != addr+" "+node+" true" {
				return errString("kube-dns endpoints: " + out)
			}
			return nil
		})
	})

	t.Run("service names from the host", func(t *testing.T) {
		eventually(t, 60*time.Second, func() error {
			got, rcode, err := ask(server, "udp", "kubernetes.default.svc.cluster.local.", dns.TypeA)
			if err != nil || rcode != dns.RcodeSuccess || !slices.Equal(got, []string{"kubernetes.default.svc.cluster.local. A 10.43.0.1"}) {
				return fmt.Errorf("kubernetes.default: %v %s %v", got, dns.RcodeToString[rcode], err)
			}
			return nil
		})
		got, _, err := ask(server, "tcp", "kube-dns.kube-system.svc.cluster.local.", dns.TypeA)
		if err != nil || !slices.Equal(got, []string{"kube-dns.kube-system.svc.cluster.local. A 10.43.0.10"}) {
			t.Errorf("kube-dns over TCP: %v %v", got, err)
		}
		got, _, err = ask(server, "udp", "_https._tcp.kubernetes.default.svc.cluster.local.", dns.TypeSRV)
		if err != nil || len(got) != 1 || !strings.Contains(got[0], "SRV 0 100 443 kubernetes.default.svc.cluster.local.") {
			t.Errorf("SRV of kubernetes: %v %v", got, err)
		}
		got, _, err = ask(server, "udp", "1.0.43.10.in-addr.arpa.", dns.TypePTR)
		if err != nil || len(got) != 1 || !strings.HasSuffix(got[0], "PTR kubernetes.default.svc.cluster.local.") {
			t.Errorf("PTR of 10.43.0.1: %v %v", got, err)
		}
		if _, rcode, err := ask(server, "udp", "nosuch.default.svc.cluster.local.", dns.TypeA); err != nil || rcode != dns.RcodeNameError {
			t.Errorf("missing service: %s %v", dns.RcodeToString[rcode], err)
		}
		if got, rcode, err := ask(server, "udp", "default.svc.cluster.local.", dns.TypeA); err != nil || rcode != dns.RcodeSuccess || len(got) != 0 {
			t.Errorf("namespace name: %v %s %v, want NODATA", got, dns.RcodeToString[rcode], err)
		}
		got, _, err = ask(server, "udp", "upstream.example.", dns.TypeA)
		if err != nil || !slices.Equal(got, []string{"upstream.example. A 192.0.2.7"}) {
			t.Errorf("forwarded: %v %v", got, err)
		}
	})

	c.stdin(dnsStatefulSet, "apply", "-f", "-")
	t.Cleanup(func() { _, _ = c.kubectlErr("delete", "statefulset", "db", "--timeout=60s") })
	waitRunning(t, c, "db-0", "db-1")
	podIP := func(name string) string {
		return strings.TrimSpace(c.kubectl("get", "pod", name, "-o", "jsonpath={.status.podIP}"))
	}
	ip0, ip1 := podIP("db-0"), podIP("db-1")

	t.Run("headless StatefulSet names", func(t *testing.T) {
		eventually(t, 60*time.Second, func() error {
			got, _, err := ask(server, "udp", "db.default.svc.cluster.local.", dns.TypeA)
			want := []string{"db.default.svc.cluster.local. A " + ip0, "db.default.svc.cluster.local. A " + ip1}
			slices.Sort(want)
			if err != nil || !slices.Equal(got, want) {
				return fmt.Errorf("headless service: %v, want %v (%v)", got, want, err)
			}
			return nil
		})
		for name, ip := range map[string]string{"db-0": ip0, "db-1": ip1} {
			fqdn := name + ".db.default.svc.cluster.local."
			got, _, err := ask(server, "udp", fqdn, dns.TypeA)
			if err != nil || !slices.Equal(got, []string{fqdn + " A " + ip}) {
				t.Errorf("%s: %v %v", fqdn, got, err)
			}
		}
		got, _, err := ask(server, "udp", "_web._tcp.db.default.svc.cluster.local.", dns.TypeSRV)
		if err != nil || len(got) != 2 || !strings.HasSuffix(got[0], "8080 db-0.db.default.svc.cluster.local.") ||
			!strings.HasSuffix(got[1], "8080 db-1.db.default.svc.cluster.local.") {
			t.Errorf("SRV of the StatefulSet: %v %v", got, err)
		}
		dashed := strings.ReplaceAll(ip0, ".", "-") + ".default.pod.cluster.local."
		got, _, err = ask(server, "udp", dashed, dns.TypeA)
		if err != nil || !slices.Equal(got, []string{dashed + " A " + ip0}) {
			t.Errorf("pod name %s: %v %v", dashed, got, err)
		}
	})

	t.Run("ExternalName", func(t *testing.T) {
		got, _, err := ask(server, "udp", "ext.default.svc.cluster.local.", dns.TypeA)
		want := []string{"ext.default.svc.cluster.local. CNAME upstream.example.", "upstream.example. A 192.0.2.7"}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ExternalName: %v, want %v (%v)", got, want, err)
		}
	})

	t.Run("from a pod at the node's address", func(t *testing.T) {
		// The pod's resolv.conf names the VIP; here the pod asks the node's address directly (an
		// address this test created), which needs no proxy.
		mustContain(t, c.kubectl("exec", "db-0", "--", "cat", "/etc/resolv.conf"), "nameserver 10.43.0.10",
			"search default.svc.cluster.local svc.cluster.local cluster.local", "ndots:5")
		out := c.kubectl("exec", "db-0", "--", "nslookup", "db-1.db.default.svc.cluster.local", addr)
		mustContain(t, out, ip1)
		out = c.kubectl("exec", "db-0", "--", "nslookup", "-type=srv", "_web._tcp.db.default.svc.cluster.local", addr)
		mustContain(t, out, "db-0.db.default.svc.cluster.local", "db-1.db.default.svc.cluster.local")
	})

	t.Run("from a pod through the kube-dns VIP", func(t *testing.T) {
		// Never send to the VIP before this node has rules that send it to this node's DNS.
		if !nodeHasDNSRules(addr) {
			t.Skip("no service proxy rules for the kube-dns VIP 10.43.0.10 pointing at " + addr + ":53 on this host (the proxy lands separately); pod-side lookups not tried")
		}
		out := c.kubectl("exec", "db-0", "--", "nslookup", "db-1.db.default.svc.cluster.local")
		mustContain(t, out, ip1)
		// busybox's nslookup does not walk the search path, so the name is given whole.
		out = c.kubectl("exec", "db-0", "--", "nslookup", "kubernetes.default.svc.cluster.local")
		mustContain(t, out, "10.43.0.1")
	})
}

// nodeHasDNSRules reports whether the host's packet filter sends the kube-dns VIP to addr: the
// VIP appears in the rules and so does this node's DNS endpoint (other tests' nodes have other
// addresses).
func nodeHasDNSRules(addr string) bool {
	var rules string
	if out, err := exec.Command("iptables-save").Output(); err == nil {
		rules += string(out)
	}
	if out, err := exec.Command("nft", "list", "ruleset").Output(); err == nil {
		rules += string(out)
	}
	return strings.Contains(rules, "10.43.0.10") && strings.Contains(rules, addr)
}
