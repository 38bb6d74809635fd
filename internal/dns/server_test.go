package dns

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeUpstream is a resolver on 127.0.0.1 standing in for the node's: it answers example.org
// with an A record (TTL 600), big.example with many, and NXDOMAIN (SOA minimum 30) otherwise.
type fakeUpstream struct {
	addr    string
	queries atomic.Int64
}

func startUpstream(t testing.TB) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{}
	pc, l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = pc.LocalAddr().String()
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		u.queries.Add(1)
		m := new(dns.Msg)
		m.SetReply(r)
		m.RecursionAvailable = true
		q := r.Question[0]
		switch {
		case q.Name == "example.org." && q.Qtype == dns.TypeA:
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 600}, A: net.IPv4(192, 0, 2, 1)}}
		case q.Name == "big.example." && q.Qtype == dns.TypeA:
			for i := range 200 {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, byte(i))})
			}
		default:
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: "example.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 3600},
				Ns: "ns.example.", Mbox: "h.example.", Minttl: 30}}
		}
		if w.LocalAddr().Network() == "udp" {
			size := dns.MinMsgSize
			if opt := r.IsEdns0(); opt != nil {
				size = int(opt.UDPSize())
			}
			m.Truncate(size)
		}
		_ = w.WriteMsg(m)
	})
	udp := &dns.Server{PacketConn: pc, Handler: handler}
	tcp := &dns.Server{Listener: l, Handler: handler}
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	t.Cleanup(func() { _ = udp.Shutdown(); _ = tcp.Shutdown() })
	return u
}

// startServer runs a Server over testView on 127.0.0.1 and returns its address.
func startServer(t testing.TB, upstreams []string, clk *clocktesting.FakeClock) (string, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	return serve(t, ServerConfig{
		Zone: Zone{Domain: "cluster.local"}, View: testView(t),
		Upstream:   &Forwarder{Upstreams: upstreams, Timeout: 2 * time.Second, Cache: NewCache(clk, 0, 0, 0)},
		Clock:      clk,
		Registerer: reg,
	}), reg
}

// serve runs a Server on 127.0.0.1 until the test ends and returns its address.
func serve(t testing.TB, cfg ServerConfig) string {
	t.Helper()
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, pc, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return pc.LocalAddr().String()
}

func query(t testing.TB, addr, network, name string, qtype uint16, edns uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if edns > 0 {
		m.SetEdns0(edns, false)
	}
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return r
}

func TestServerUDPAndTCP(t *testing.T) {
	addr, reg := startServer(t, nil, clocktesting.NewFakeClock(time.Now()))
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			r := query(t, addr, network, "kubernetes.default.svc.cluster.local.", dns.TypeA, 0)
			if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.43.0.1" {
				t.Fatalf("reply %v", r)
			}
			r = query(t, addr, network, "nosuch.default.svc.cluster.local.", dns.TypeA, 0)
			if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
				t.Fatalf("negative reply %v", r)
			}
			r = query(t, addr, network, "kubernetes.default.svc.cluster.local.", dns.TypeAAAA, 0)
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
				t.Fatalf("NODATA reply %v", r)
			}
			// Mixed case comes back as asked.
			r = query(t, addr, network, "Kubernetes.DEFAULT.svc.cluster.local.", dns.TypeA, 0)
			if len(r.Answer) != 1 || r.Answer[0].Header().Name != "Kubernetes.DEFAULT.svc.cluster.local." {
				t.Fatalf("mixed-case reply %v", r)
			}
			// No upstream: other names fail rather than hang.
			if r = query(t, addr, network, "example.org.", dns.TypeA, 0); r.Rcode != dns.RcodeServerFailure {
				t.Fatalf("forward without upstream: %v", r)
			}
		})
	}
	// The answers were counted, by transport and rcode (before each reply was written).
	counted := func(proto, rcode string) bool {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "skiff_dns_requests_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["proto"] == proto && labels["rcode"] == rcode && m.GetCounter().GetValue() > 0 {
					return true
				}
			}
		}
		return false
	}
	for _, want := range [][2]string{{"udp", "NOERROR"}, {"tcp", "NOERROR"}, {"udp", "NXDOMAIN"}, {"tcp", "NXDOMAIN"}} {
		if !counted(want[0], want[1]) {
			t.Errorf("no %s %s answer counted", want[0], want[1])
		}
	}
}

func TestServerEDNSAndTruncation(t *testing.T) {
	var objs []any
	objs = append(objs, namespace("big"), service("big", "many").headless().obj())
	s := slice("big", "many", "many-1")
	for i := range 200 {
		s = s.ep(fmt.Sprintf("10.42.%d.%d", i/250, i%250+1), "", true)
	}
	objs = append(objs, s.obj())
	v, err := NewIndexerView(objs...)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, ServerConfig{Zone: Zone{Domain: "cluster.local"}, View: v})
	const name = "many.big.svc.cluster.local."

	plain := query(t, addr, "udp", name, dns.TypeA, 0)
	plain.Compress = true // Len is then the compressed size that was on the wire
	if !plain.Truncated || plain.Len() > dns.MinMsgSize || len(plain.Answer) == 0 {
		t.Errorf("UDP without EDNS0: TC=%v, %d bytes, %d answers", plain.Truncated, plain.Len(), len(plain.Answer))
	}
	edns := query(t, addr, "udp", name, dns.TypeA, 4096)
	edns.Compress = true
	if !edns.Truncated || edns.Len() > DefaultMaxUDPSize || len(edns.Answer) <= len(plain.Answer) {
		t.Errorf("UDP with EDNS0 4096: TC=%v, %d bytes, %d answers (plain %d)", edns.Truncated, edns.Len(), len(edns.Answer), len(plain.Answer))
	}
	if opt := edns.IsEdns0(); opt == nil || opt.UDPSize() != DefaultMaxUDPSize {
		t.Errorf("EDNS0 in reply: %v", opt)
	}
	full := query(t, addr, "tcp", name, dns.TypeA, 0)
	if full.Truncated || len(full.Answer) != 200 {
		t.Errorf("TCP: TC=%v, %d answers", full.Truncated, len(full.Answer))
	}
	// An EDNS version we do not speak.
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(1232, false)
	m.IsEdns0().SetVersion(1)
	r, _, err := (&dns.Client{Net: "udp"}).Exchange(m, addr)
	if err != nil || r.Rcode != dns.RcodeBadVers {
		t.Errorf("EDNS version 1: %v %v", r, err)
	}
}

func TestServerForwardsAndCaches(t *testing.T) {
	up := startUpstream(t)
	clk := clocktesting.NewFakeClock(time.Now())
	addr, _ := startServer(t, []string{up.addr}, clk)

	r := query(t, addr, "udp", "example.org.", dns.TypeA, 0)
	if r.Rcode != dns.RcodeSuccess || r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
		t.Fatalf("forwarded reply %v", r)
	}
	// Served from the cache, TTL lowered by the age and capped.
	clk.Step(10 * time.Second)
	asked := up.queries.Load()
	r = query(t, addr, "udp", "example.org.", dns.TypeA, 0)
	if up.queries.Load() != asked || len(r.Answer) != 1 || r.Answer[0].Header().Ttl != 600-10 {
		t.Fatalf("second query: upstream asked again (%d -> %d) or reply %v", asked, up.queries.Load(), r)
	}
	// Negative answers are cached for the SOA minimum (30 s), then asked again.
	r = query(t, addr, "udp", "nosuch.example.", dns.TypeA, 0)
	if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 {
		t.Fatalf("negative reply %v", r)
	}
	asked = up.queries.Load()
	clk.Step(29 * time.Second)
	query(t, addr, "udp", "nosuch.example.", dns.TypeA, 0)
	if up.queries.Load() != asked {
		t.Fatal("negative answer not cached")
	}
	clk.Step(2 * time.Second)
	query(t, addr, "udp", "nosuch.example.", dns.TypeA, 0)
	if up.queries.Load() == asked {
		t.Fatal("negative answer cached past the SOA minimum")
	}
	// A truncated upstream answer is fetched again over TCP and passed on whole over TCP.
	r = query(t, addr, "tcp", "big.example.", dns.TypeA, 0)
	if r.Truncated || len(r.Answer) != 200 {
		t.Fatalf("big answer over TCP: TC=%v, %d answers", r.Truncated, len(r.Answer))
	}
	// An ExternalName pointing outside: the CNAME and the target's address.
	r = query(t, addr, "udp", "ext.team.svc.cluster.local.", dns.TypeA, 0)
	if got := rrs(r.Answer); !slices.Equal(got, []string{"example.org. A 192.0.2.1", "ext.team.svc.cluster.local. CNAME example.org."}) {
		t.Fatalf("ExternalName answer %q", got)
	}
}

func TestServerUpstreamDown(t *testing.T) {
	// A port nothing answers on: bind one, note it, close it.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := pc.LocalAddr().String()
	_ = pc.Close()
	up := startUpstream(t)
	clk := clocktesting.NewFakeClock(time.Now())
	addr, _ := startServer(t, []string{dead}, clk)
	if r := query(t, addr, "tcp", "example.org.", dns.TypeA, 0); r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("dead upstream: %v", r)
	}
	// The next upstream is tried when the first fails.
	addr2, _ := startServer(t, []string{dead, up.addr}, clk)
	if r := query(t, addr2, "tcp", "example.org.", dns.TypeA, 0); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("second upstream: %v", r)
	}
}

func TestAnswerRejectsOddRequests(t *testing.T) {
	srv, err := NewServer(ServerConfig{Zone: Zone{Domain: "cluster.local"}, View: testView(t)})
	if err != nil {
		t.Fatal(err)
	}
	two := new(dns.Msg)
	two.SetQuestion("a.cluster.local.", dns.TypeA)
	two.Question = append(two.Question, two.Question[0])
	none := new(dns.Msg)
	notify := new(dns.Msg)
	notify.SetNotify("cluster.local.")
	chaos := new(dns.Msg)
	chaos.SetQuestion("version.bind.", dns.TypeTXT)
	chaos.Question[0].Qclass = dns.ClassCHAOS
	for name, tc := range map[string]struct {
		req   *dns.Msg
		rcode int
	}{
		"two questions": {two, dns.RcodeFormatError}, "no question": {none, dns.RcodeFormatError},
		"notify": {notify, dns.RcodeNotImplemented}, "chaos class": {chaos, dns.RcodeNotImplemented},
	} {
		r := srv.Answer(context.Background(), tc.req)
		if r.Rcode != tc.rcode || !r.Response || r.Id != tc.req.Id {
			t.Errorf("%s: %v", name, r)
		}
		if _, err := r.Pack(); err != nil {
			t.Errorf("%s: reply does not pack: %v", name, err)
		}
	}
}

func TestCacheTTL(t *testing.T) {
	soa := func(ttl, minttl uint32) dns.RR {
		return &dns.SOA{Hdr: dns.RR_Header{Name: "example.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: ttl}, Ns: "ns.", Mbox: "h.", Minttl: minttl}
	}
	a := func(ttl uint32) dns.RR {
		return &dns.A{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: net.IPv4(192, 0, 2, 1)}
	}
	tests := []struct {
		name string
		msg  *dns.Msg
		want time.Duration
		ok   bool
	}{
		{"positive: least TTL", &dns.Msg{Answer: []dns.RR{a(100), a(40)}}, 40 * time.Second, true},
		{"positive: capped", &dns.Msg{Answer: []dns.RR{a(86400)}}, DefaultMaxTTL, true},
		{"positive: TTL 0 not cached", &dns.Msg{Answer: []dns.RR{a(0)}}, 0, false},
		{"NXDOMAIN: SOA minimum", &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}, Ns: []dns.RR{soa(3600, 30)}}, 30 * time.Second, true},
		{"NXDOMAIN: SOA TTL below minimum", &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}, Ns: []dns.RR{soa(10, 30)}}, 10 * time.Second, true},
		{"NXDOMAIN: capped", &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}, Ns: []dns.RR{soa(3600, 3600)}}, DefaultMaxNegativeTTL, true},
		{"NODATA: SOA minimum", &dns.Msg{Ns: []dns.RR{soa(3600, 20)}}, 20 * time.Second, true},
		{"NXDOMAIN without SOA", &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}}, 0, false},
		{"SERVFAIL", &dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeServerFailure}, Ns: []dns.RR{soa(3600, 20)}}, 0, false},
		{"truncated", &dns.Msg{MsgHdr: dns.MsgHdr{Truncated: true}, Answer: []dns.RR{a(100)}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := CacheTTL(tt.msg, DefaultMaxTTL, DefaultMaxNegativeTTL)
			if got != tt.want || ok != tt.ok {
				t.Errorf("CacheTTL = %v %v, want %v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCacheBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := NewCache(clk, 0, 0, 3)
	for i := range 10 {
		q := dns.Question{Name: fmt.Sprintf("n%d.example.", i), Qtype: dns.TypeA, Qclass: dns.ClassINET}
		c.Put(q, false, &dns.Msg{Question: []dns.Question{q}, Answer: []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 1)}}})
		if c.Len() > 3 {
			t.Fatalf("%d entries after %d puts", c.Len(), i+1)
		}
	}
	q := dns.Question{Name: "N9.example.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	if _, ok := c.Get(q, false); !ok {
		t.Fatal("the newest entry was evicted (or the key is case-sensitive)")
	}
	clk.Step(61 * time.Second)
	if _, ok := c.Get(q, false); ok {
		t.Fatal("expired entry served")
	}
}

// FuzzAnswer: no request, however malformed, makes the query path panic, and every reply packs.
func FuzzAnswer(f *testing.F) {
	for _, name := range []string{"kubernetes.default.svc.cluster.local.", "_pg._tcp.db.team.svc.cluster.local.", "1.0.43.10.in-addr.arpa.",
		"10-42-0-1.team.pod.cluster.local.", "alias.team.svc.cluster.local.", "db-0.db.team.svc.cluster.local."} {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypePTR, dns.TypeANY} {
			m := new(dns.Msg)
			m.SetQuestion(name, qtype)
			m.SetEdns0(1232, true)
			b, err := m.Pack()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	srv, err := NewServer(ServerConfig{Zone: Zone{Domain: "cluster.local"}, View: testView(f)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := new(dns.Msg)
		if err := req.Unpack(data); err != nil {
			return
		}
		reply := srv.Answer(context.Background(), req)
		srv.Fit(req, reply, true)
		if _, err := reply.Pack(); err != nil {
			t.Fatalf("reply to %v does not pack: %v", req, err)
		}
	})
}

// BenchmarkQueryService measures queries/s and latency percentiles for a service name over UDP
// on loopback, with parallel clients.
func BenchmarkQueryService(b *testing.B) {
	addr, _ := startServer(b, nil, clocktesting.NewFakeClock(time.Now()))
	var latencies []time.Duration
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
		conn, err := c.Dial(addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		m := new(dns.Msg)
		m.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
		var local []time.Duration
		for pb.Next() {
			t0 := time.Now()
			r, _, err := c.ExchangeWithConn(m, conn)
			if err != nil || len(r.Answer) != 1 {
				b.Errorf("query: %v %v", r, err)
				return
			}
			local = append(local, time.Since(t0))
		}
		<-mu
		latencies = append(latencies, local...)
		mu <- struct{}{}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "queries/s")
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkResolve is the pure lookup alone.
func BenchmarkResolve(b *testing.B) {
	v := testView(b)
	z := Zone{Domain: "cluster.local"}
	for b.Loop() {
		if r := z.Resolve(v, "web.team.svc.cluster.local.", dns.TypeA); len(r.Answer) != 1 {
			b.Fatal(r)
		}
	}
}
