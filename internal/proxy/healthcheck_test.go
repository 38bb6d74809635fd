package proxy

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func withHealthCheck(b svcBuilder, port int32) svcBuilder {
	b.s.Spec.HealthCheckNodePort = port
	return b
}

func TestHealthChecks(t *testing.T) {
	lbLocal := func(name, ip string, hc int32) *corev1.Service {
		return withHealthCheck(makeSvc(name, ip).port("http", 80, tcp).port("https", 443, tcp).nodePort(30443).lbIngress("192.168.7.1").etpLocal(), hc).obj()
	}
	tests := []struct {
		name   string
		svcs   []*corev1.Service
		slices []*discoveryv1.EndpointSlice
		want   map[int32]ServiceHealth
	}{{
		name: "local ready endpoints counted by address across ports",
		svcs: []*corev1.Service{lbLocal("web", "10.96.0.10", 32000)},
		slices: []*discoveryv1.EndpointSlice{
			makeSlice("web", "http", 8080, tcp, readyEp("10.244.1.5", "node-a"), readyEp("10.244.2.5", "node-b"), ep{ip: "10.244.1.6", node: "node-a"}),
			makeSlice("web", "https", 8443, tcp, readyEp("10.244.1.5", "node-a"), readyEp("10.244.1.7", "node-a")),
		},
		want: map[int32]ServiceHealth{32000: {Namespace: "ns", Name: "web", LocalEndpoints: 2}},
	}, {
		// Upstream's "should fail health check node port if there are only terminating
		// endpoints": a pod being deleted still serves (the rules fall back to it) but the
		// load balancer is told to send no new traffic to this node.
		name:   "only terminating local endpoints: none",
		svcs:   []*corev1.Service{lbLocal("web", "10.96.0.10", 32000)},
		slices: []*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp, ep{ip: "10.244.1.5", node: "node-a", serving: true, terminating: true})},
		want:   map[int32]ServiceHealth{32000: {Namespace: "ns", Name: "web"}},
	}, {
		name:   "no local endpoint",
		svcs:   []*corev1.Service{lbLocal("web", "10.96.0.10", 32000)},
		slices: []*discoveryv1.EndpointSlice{makeSlice("web", "http", 8080, tcp, readyEp("10.244.2.5", "node-b"))},
		want:   map[int32]ServiceHealth{32000: {Namespace: "ns", Name: "web"}},
	}, {
		name: "only LoadBalancer Services with policy Local and a port",
		svcs: []*corev1.Service{
			withHealthCheck(makeSvc("cluster", "10.96.0.11").port("http", 80, tcp).lbIngress("192.168.7.2"), 32001).obj(),
			withHealthCheck(makeSvc("np", "10.96.0.12").port("http", 80, tcp).nodePort(30080).etpLocal(), 32002).obj(),
			lbLocal("unallocated", "10.96.0.13", 0),
			lbLocal("headless", "None", 32003),
		},
		want: map[int32]ServiceHealth{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HealthChecks(testConfig(), tt.svcs, tt.slices)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for port, w := range tt.want {
				if got[port] != w {
					t.Errorf("port %d: got %+v, want %+v", port, got[port], w)
				}
			}
		})
	}
}

// TestHealthCheckServer serves real listeners on 127.0.0.1 (ports the kernel picks): 200 with
// kube-proxy's JSON while the Service has local endpoints, 503 without, 503 when the proxy has a
// change waiting longer than the timeout, and the listener is closed when the port goes.
func TestHealthCheckServer(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	ph := &proxyHealth{clock: clk, timeout: time.Minute}
	hs := newHealthServers(netip.MustParseAddr("127.0.0.1"), ph, slog.New(slog.DiscardHandler))
	// Port 0 picks a free one; remember what it bound.
	var bound string
	hs.listen = func(network, address string) (net.Listener, error) {
		l, err := net.Listen(network, "127.0.0.1:0")
		if err == nil {
			bound = l.Addr().String()
		}
		return l, err
	}
	t.Cleanup(hs.close)
	get := func() (int, healthReply, http.Header) {
		t.Helper()
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + bound + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var r healthReply
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("reply %q: %v", body, err)
		}
		return resp.StatusCode, r, resp.Header
	}

	ph.synced()
	hs.sync(map[int32]ServiceHealth{32000: {Namespace: "ns", Name: "web", LocalEndpoints: 2}})
	code, r, h := get()
	if code != 200 || r.Service.Namespace != "ns" || r.Service.Name != "web" || r.LocalEndpoints != 2 || !r.ServiceProxyHealthy ||
		h.Get("Content-Type") != "application/json" || h.Get("X-Load-Balancing-Endpoint-Weight") != "2" {
		t.Errorf("with local endpoints: %d %+v %v", code, r, h)
	}

	hs.sync(map[int32]ServiceHealth{32000: {Namespace: "ns", Name: "web"}})
	if code, r, _ := get(); code != 503 || r.LocalEndpoints != 0 || !r.ServiceProxyHealthy {
		t.Errorf("without local endpoints: %d %+v", code, r)
	}

	hs.sync(map[int32]ServiceHealth{32000: {Namespace: "ns", Name: "web", LocalEndpoints: 1}})
	ph.queued()
	clk.Step(2 * time.Minute)
	if code, r, _ := get(); code != 503 || r.ServiceProxyHealthy {
		t.Errorf("proxy behind on its syncs: %d %+v", code, r)
	}
	ph.synced()
	if code, _, _ := get(); code != 200 {
		t.Errorf("after the sync: %d", code)
	}

	hs.sync(map[int32]ServiceHealth{})
	if _, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + bound + "/"); err == nil {
		t.Error("the port still answers after its Service went")
	}
}

func TestProxyHealthz(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	ph := &proxyHealth{clock: clk, timeout: time.Minute}
	code := func() int {
		rec := httptest.NewRecorder()
		ph.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		return rec.Code
	}
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"before the first sync", func() {}, 503},
		{"after it", ph.synced, 200},
		{"a change waiting briefly", func() { ph.queued(); clk.Step(30 * time.Second) }, 200},
		{"a change waiting too long", func() { clk.Step(time.Minute) }, 503},
		{"synced again", ph.synced, 200},
		{"quiet for long", func() { clk.Step(time.Hour) }, 200},
	}
	for _, s := range steps {
		s.do()
		if got := code(); got != s.want {
			t.Errorf("%s: %d, want %s", s.name, got, strconv.Itoa(s.want))
		}
	}
}
