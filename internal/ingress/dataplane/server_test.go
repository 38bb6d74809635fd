package dataplane

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// startServer runs a data plane serving every port of its tables on 127.0.0.1:0.
func startServer(t *testing.T) *Server {
	t.Helper()
	s := New(Options{ListenAddress: func(routes.ListenerKey) string { return "127.0.0.1:0" }, ShutdownGrace: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

func set(t *testing.T, s *Server, tbl routes.Table) {
	t.Helper()
	if err := s.Set(tbl); err != nil {
		t.Fatalf("Set: %v", err)
	}
}

func addr(t *testing.T, s *Server, port int32) string {
	t.Helper()
	a, ok := s.Addr(routes.ListenerKey{Port: port})
	if !ok {
		t.Fatalf("port %d not served", port)
	}
	return a.String()
}

// upstream is an httptest server answering its name and the path it saw.
func upstream(t testing.TB, name string) (*httptest.Server, string) {
	t.Helper()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", name)
		fmt.Fprintf(w, "%s %s %s", name, r.URL.Path, r.Header.Get("X-Added"))
	}))
	t.Cleanup(b.Close)
	return b, strings.TrimPrefix(b.URL, "http://")
}

func httpTable(hosts ...routes.VirtualHost) routes.Table {
	return routes.Table{Listeners: []routes.Listener{{Name: "http", Port: 80, Protocol: routes.ProtocolHTTP, Hosts: hosts}}}
}

func get(t *testing.T, c *http.Client, u, host string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", u, host, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

func TestServerRoutesByHostAndPath(t *testing.T) {
	s := startServer(t)
	_, a := upstream(t, "a")
	_, b := upstream(t, "b")
	set(t, s, httpTable(
		routes.VirtualHost{Hostname: "a.test", Routes: []routes.Route{
			rt("empty", prefix("/empty"), be("empty", 1)),
			{Source: routes.Source{Name: "rewrite"}, Match: prefix("/old"), Backends: []routes.Backend{be("b", 1, b)}, Filters: []routes.Filter{
				{Type: routes.FilterURLRewrite, URLRewrite: &routes.URLRewrite{Path: &routes.PathModifier{Type: routes.ReplacePrefixMatch, ReplacePrefixMatch: "/new"}}},
				{Type: routes.FilterRequestHeaderModifier, RequestHeaderModifier: &routes.HeaderModifier{Set: []routes.Header{{Name: "X-Added", Value: "yes"}}}},
				{Type: routes.FilterResponseHeaderModifier, ResponseHeaderModifier: &routes.HeaderModifier{Remove: []string{"X-Backend"}, Add: []routes.Header{{Name: "X-Via", Value: "skiff"}}}},
			}},
			rt("a", prefix("/"), be("a", 1, a)),
		}},
		routes.VirtualHost{Hostname: "b.test", Routes: []routes.Route{rt("b", prefix("/"), be("b", 1, b))}},
	))
	base := "http://" + addr(t, s, 80)
	c := &http.Client{}
	cases := []struct {
		host, path, body string
		code             int
	}{
		{"a.test", "/x", "a /x ", 200},
		{"b.test", "/x", "b /x ", 200},
		{"a.test", "/old/page", "b /new/page yes", 200},
		{"c.test", "/", "", 404},
		{"a.test", "/empty", "", 503},
	}
	for _, tc := range cases {
		code, body, hdr := get(t, c, base+tc.path, tc.host)
		if code != tc.code || (tc.body != "" && body != tc.body) {
			t.Errorf("%s%s: %d %q, want %d %q", tc.host, tc.path, code, body, tc.code, tc.body)
		}
		if tc.path == "/old/page" && (hdr.Get("X-Backend") != "" || hdr.Get("X-Via") != "skiff") {
			t.Errorf("response headers not modified: %v", hdr)
		}
	}
}

func selfSigned(t *testing.T, cn string, names ...string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func httpsTable(certs []routes.Certificate, hosts ...routes.VirtualHost) routes.Table {
	return routes.Table{Listeners: []routes.Listener{{Name: "https", Port: 443, Protocol: routes.ProtocolHTTPS, Certificates: certs, Hosts: hosts}}}
}

// tlsClient is a client pinned to serverName that records the certificates it is shown.
func tlsClient(serverName string, seen *sync.Map) *http.Client {
	return &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{
		ServerName: serverName, InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			seen.Store(cs.PeerCertificates[0].Subject.CommonName, true)
			return nil
		},
	}}}
}

func TestServerTLSBySNIAndRotation(t *testing.T) {
	s := startServer(t)
	_, a := upstream(t, "a")
	_, b := upstream(t, "b")
	hosts := []routes.VirtualHost{
		{Hostname: "a.test", Routes: []routes.Route{rt("a", prefix("/"), be("a", 1, a))}},
		{Hostname: "b.test", Routes: []routes.Route{rt("b", prefix("/"), be("b", 1, b))}},
	}
	certA := routes.Certificate{Hostnames: []string{"a.test"}, Cert: selfSigned(t, "a-1", "a.test")}
	certB := routes.Certificate{Hostnames: []string{"b.test"}, Cert: selfSigned(t, "b-1", "b.test")}
	set(t, s, httpsTable([]routes.Certificate{certA, certB}, hosts...))
	u := "https://" + addr(t, s, 443) + "/"

	var seenA, seenB sync.Map
	ca, cb := tlsClient("a.test", &seenA), tlsClient("b.test", &seenB)
	req, _ := http.NewRequest("GET", u, nil)
	req.Host = "a.test"
	res, err := ca.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.ProtoMajor != 2 || !strings.HasPrefix(string(body), "a ") {
		t.Fatalf("a.test: %s %q, want HTTP/2 from a", res.Proto, body)
	}
	if code, body, _ := get(t, cb, u, "b.test"); code != 200 || !strings.HasPrefix(body, "b ") {
		t.Fatalf("b.test: %d %q", code, body)
	}
	if _, ok := seenA.Load("a-1"); !ok {
		t.Fatalf("a.test was not shown a-1")
	}
	if _, ok := seenB.Load("b-1"); !ok {
		t.Fatalf("b.test was not shown b-1")
	}

	// Rotate a.test's certificate: the open HTTP/2 connection keeps serving, a new handshake
	// gets the new certificate.
	var reused atomic.Bool
	certA2 := routes.Certificate{Hostnames: []string{"a.test"}, Cert: selfSigned(t, "a-2", "a.test")}
	set(t, s, httpsTable([]routes.Certificate{certA2, certB}, hosts...))
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused.Store(i.Reused) }})
	req, _ = http.NewRequestWithContext(ctx, "GET", u, nil)
	req.Host = "a.test"
	res, err = ca.Do(req)
	if err != nil {
		t.Fatalf("request on the open connection after rotation: %v", err)
	}
	res.Body.Close()
	if !reused.Load() {
		t.Errorf("the open connection was not reused after the rotation")
	}
	var seenA2 sync.Map
	if code, _, _ := get(t, tlsClient("a.test", &seenA2), u, "a.test"); code != 200 {
		t.Fatalf("after rotation: %d", code)
	}
	if _, ok := seenA2.Load("a-2"); !ok {
		t.Fatalf("a new handshake after rotation was not shown a-2")
	}
}

func TestServerPassesUpgrades(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "upgrade required", http.StatusUpgradeRequired)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		_, _ = brw.WriteString("echo " + line)
		_ = brw.Flush()
	}))
	t.Cleanup(up.Close)
	s := startServer(t)
	set(t, s, httpTable(routes.VirtualHost{Routes: []routes.Route{rt("ws", prefix("/"), be("ws", 1, strings.TrimPrefix(up.URL, "http://")))}}))
	conn, err := net.Dial("tcp", addr(t, s, 80))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second)) // a hang fails instead of blocking the suite
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: x.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", res.StatusCode)
	}
	fmt.Fprintf(conn, "hello\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "echo hello\n" {
		t.Fatalf("echo = %q, %v", line, err)
	}
}

func TestServerStreamsBodies(t *testing.T) {
	release := make(chan struct{})
	st := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "first")
		http.NewResponseController(w).Flush()
		<-release
		fmt.Fprintln(w, "second")
	}))
	t.Cleanup(st.Close)
	s := startServer(t)
	set(t, s, httpTable(routes.VirtualHost{Routes: []routes.Route{rt("st", prefix("/"), be("st", 1, strings.TrimPrefix(st.URL, "http://")))}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr(t, s, 80)+"/", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	// The backend holds "second" until the first line arrived: a buffering proxy never
	// delivers it, and the deadline fails the test.
	if line, err := br.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("first line = %q, %v", line, err)
	}
	close(release)
	if rest, err := io.ReadAll(br); err != nil || string(rest) != "second\n" {
		t.Fatalf("rest = %q, %v", rest, err)
	}
}

func TestServerRetriesUnreachableEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now: connecting is refused
	_, live := upstream(t, "live")
	s := startServer(t)
	set(t, s, httpTable(routes.VirtualHost{Routes: []routes.Route{rt("r", prefix("/"), be("r", 1, dead, live))}}))
	for i := 0; i < 4; i++ {
		if code, body, _ := get(t, http.DefaultClient, "http://"+addr(t, s, 80)+"/", "x"); code != 200 || !strings.HasPrefix(body, "live") {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
	}
}

func TestServerSwapUnderLoad(t *testing.T) {
	_, a := upstream(t, "a")
	_, b := upstream(t, "b")
	s := startServer(t)
	tables := []routes.Table{
		httpTable(routes.VirtualHost{Routes: []routes.Route{rt("r", prefix("/"), be("a", 1, a))}}),
		httpTable(routes.VirtualHost{Routes: []routes.Route{rt("r", prefix("/"), be("b", 1, b))}}),
	}
	set(t, s, tables[0])
	u := "http://" + addr(t, s, 80) + "/"
	const clients = 8
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Go(func() {
			// One connection each, written by hand: had the data plane closed it, the next
			// request on it fails (a client library would dial again without a word).
			conn, err := net.Dial("tcp", addr(t, s, 80))
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(60 * time.Second)) // a hang fails instead of blocking
			br := bufio.NewReader(conn)
			for n := 0; !stop.Load() || n < 20; n++ {
				if _, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x.test\r\n\r\n"); err != nil {
					errs <- fmt.Errorf("request %d: %w", n, err)
					return
				}
				res, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- fmt.Errorf("response %d: %w", n, err)
					return
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != 200 || res.Close {
					errs <- fmt.Errorf("response %d: %d %q close=%v %v", n, res.StatusCode, body, res.Close, err)
					return
				}
			}
		})
	}
	for i := 1; i <= 200; i++ {
		set(t, s, tables[i%2])
	}
	set(t, s, tables[1])
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The last table sends everything to b.
	if code, body, _ := get(t, http.DefaultClient, u, "x"); code != 200 || !strings.HasPrefix(body, "b ") {
		t.Fatalf("after the swaps: %d %q", code, body)
	}
}

func TestServerClosesDroppedPort(t *testing.T) {
	_, a := upstream(t, "a")
	s := startServer(t)
	tbl := httpTable(routes.VirtualHost{Routes: []routes.Route{rt("r", prefix("/"), be("a", 1, a))}})
	tbl.Listeners = append(tbl.Listeners, routes.Listener{Name: "other", Port: 8080, Protocol: routes.ProtocolHTTP, Hosts: tbl.Listeners[0].Hosts})
	set(t, s, tbl)
	other := addr(t, s, 8080)
	if code, _, _ := get(t, http.DefaultClient, "http://"+other+"/", "x"); code != 200 {
		t.Fatalf("port 8080: %d", code)
	}
	tbl.Listeners = tbl.Listeners[:1]
	set(t, s, tbl)
	if _, ok := s.Addr(routes.ListenerKey{Port: 8080}); ok {
		t.Fatalf("port 8080 still served after the table dropped it")
	}
	if code, _, _ := get(t, http.DefaultClient, "http://"+addr(t, s, 80)+"/", "x"); code != 200 {
		t.Fatalf("port 80 after dropping 8080: %d", code)
	}
}

// TestServerKeepsAddressesApart: two Gateways' listeners on one port, each at an address of its
// own, answer with their own routes, whether each address has a socket of its own (the data
// plane bound to one address) or one socket on every address serves them by the address a
// connection reached. The data plane's own listener keeps the node's address.
func TestServerKeepsAddressesApart(t *testing.T) {
	_, a := upstream(t, "a")
	_, b := upstream(t, "b")
	_, n := upstream(t, "node")
	tbl := routes.Table{Listeners: []routes.Listener{
		{Name: "node", Port: 80, Protocol: routes.ProtocolHTTP, Hosts: []routes.VirtualHost{{Routes: []routes.Route{rt("n", prefix("/"), be("node", 1, n))}}}},
		{Name: "gw-a", Address: "127.0.0.2", Port: 80, Protocol: routes.ProtocolHTTP, Hosts: []routes.VirtualHost{{Routes: []routes.Route{rt("a", prefix("/"), be("a", 1, a))}}}},
		{Name: "gw-b", Address: "127.0.0.3", Port: 80, Protocol: routes.ProtocolHTTP, Hosts: []routes.VirtualHost{{Routes: []routes.Route{rt("b", prefix("/"), be("b", 1, b))}}}},
	}}
	for _, mode := range []struct {
		name    string
		address string
		// at is where a client reaches listener k.
		at func(s *Server, k routes.ListenerKey) string
	}{
		{name: "a socket per address", address: "127.0.0.1", at: func(s *Server, k routes.ListenerKey) string {
			a, ok := s.Addr(k)
			if !ok {
				t.Fatalf("%v not served", k)
			}
			return a.String()
		}},
		{name: "one socket on every address", address: "0.0.0.0", at: func(s *Server, k routes.ListenerKey) string {
			a, ok := s.Addr(k)
			if !ok {
				t.Fatalf("%v not served", k)
			}
			host := k.Address
			if host == "" {
				host = "127.0.0.1"
			}
			return net.JoinHostPort(host, fmt.Sprint(a.(*net.TCPAddr).Port))
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			s := New(Options{Address: mode.address, ShutdownGrace: 5 * time.Second, ListenAddress: func(k routes.ListenerKey) string {
				host := k.Address
				if host == "" {
					host = mode.address
				}
				return net.JoinHostPort(host, "0")
			}})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			defer func() { cancel(); <-done }()
			set(t, s, tbl)
			for _, want := range []struct {
				key  routes.ListenerKey
				body string
			}{{routes.ListenerKey{Port: 80}, "node"}, {routes.ListenerKey{Address: "127.0.0.2", Port: 80}, "a"}, {routes.ListenerKey{Address: "127.0.0.3", Port: 80}, "b"}} {
				code, body, _ := get(t, http.DefaultClient, "http://"+mode.at(s, want.key)+"/x", "any")
				if code != 200 || !strings.HasPrefix(body, want.body+" ") {
					t.Errorf("%v: %d %q, want 200 from %s", want.key, code, body, want.body)
				}
			}
		})
	}
}

// TestServerSpeaksH2CToH2CBackends: a backend marked h2c (a Service port's appProtocol
// kubernetes.io/h2c, a GRPCRoute's) is reached over HTTP/2 with prior knowledge, trailers
// passed back as gRPC needs them; an ordinary backend over HTTP/1.1.
func TestServerSpeaksH2CToH2CBackends(t *testing.T) {
	seen := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "Grpc-Status")
			fmt.Fprintf(w, "%s %s", name, r.Proto)
			w.Header().Set("Grpc-Status", "0")
		})
	}
	h2 := httptest.NewUnstartedServer(seen("h2c"))
	h2.Config.Protocols = new(http.Protocols)
	h2.Config.Protocols.SetUnencryptedHTTP2(true)
	h2.Start()
	t.Cleanup(h2.Close)
	h1 := httptest.NewServer(seen("h1"))
	t.Cleanup(h1.Close)
	h2c := be("h2c", 1, strings.TrimPrefix(h2.URL, "http://"))
	h2c.Protocol = routes.BackendH2C
	s := startServer(t)
	set(t, s, httpTable(routes.VirtualHost{Routes: []routes.Route{
		rt("h2", prefix("/h2"), h2c), rt("h1", prefix("/"), be("h1", 1, strings.TrimPrefix(h1.URL, "http://")))}}))
	client := &http.Client{Transport: &http.Transport{Protocols: new(http.Protocols)}}
	client.Transport.(*http.Transport).Protocols.SetUnencryptedHTTP2(true)
	for path, want := range map[string]string{"/h2": "h2c HTTP/2.0", "/": "h1 HTTP/1.1"} {
		res, err := client.Get("http://" + addr(t, s, 80) + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(body) != want {
			t.Errorf("%s: %q, want %q", path, body, want)
		}
		if path == "/h2" && res.Trailer.Get("Grpc-Status") != "0" {
			t.Errorf("%s: trailers %v, want Grpc-Status passed back", path, res.Trailer)
		}
	}
}
