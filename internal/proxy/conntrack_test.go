package proxy

import (
	"context"
	"log/slog"
	"net"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/netnstest"
)

func TestBuildUDPState(t *testing.T) {
	cfg := testConfig()
	svcs := []*corev1.Service{
		makeSvc("dns", "10.96.0.10").port("dns", 53, udp).port("dns-tcp", 53, tcp).obj(),
		makeSvc("np", "10.96.0.11").port("u", 5300, udp).nodePort(30053).externalIP("192.0.2.7").lbIngress("192.0.2.8").obj(),
		makeSvc("web", "10.96.0.12").port("http", 80, tcp).obj(),
	}
	slices := []*discoveryv1.EndpointSlice{
		makeSlice("dns", "dns", 53, udp, readyEp("10.244.1.3", "node-b"), readyEp("10.244.1.2", "node-a")),
		makeSlice("np", "u", 9000, udp, ep{ip: "10.244.1.9", node: "node-a"}),
	}
	got := BuildUDPState(cfg, svcs, slices)
	want := UDPState{
		"ns/dns:dns": {Addrs: []string{"10.96.0.10"}, Endpoints: []string{"10.244.1.2", "10.244.1.3"}},
		"ns/np:u":    {Addrs: []string{"10.96.0.11", "192.0.2.7", "192.0.2.8"}, NodePort: 30053},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("UDP state\n%#v\nwant\n%#v", got, want)
	}
}

func TestStaleConntrack(t *testing.T) {
	vip := func(eps ...string) UDPPort { return UDPPort{Addrs: []string{"10.96.0.10"}, Endpoints: eps} }
	np := UDPPort{Addrs: []string{"10.96.0.11", "192.0.2.8"}, NodePort: 30053, Endpoints: []string{"10.244.1.9"}}
	tests := []struct {
		name       string
		prev, next UDPState
		want       []string
	}{
		{name: "first sync: nothing", next: UDPState{"a": vip("10.244.1.2")}},
		{name: "unchanged: nothing", prev: UDPState{"a": vip("10.244.1.2")}, next: UDPState{"a": vip("10.244.1.2")}, want: nil},
		{name: "endpoint gone: its NATed entries", prev: UDPState{"a": vip("10.244.1.2", "10.244.1.3")}, next: UDPState{"a": vip("10.244.1.3")},
			want: []string{"-D -p udp --orig-dst 10.96.0.10 --dst-nat 10.244.1.2"}},
		{name: "endpoint added to a port that had some: nothing", prev: UDPState{"a": vip("10.244.1.2")}, next: UDPState{"a": vip("10.244.1.2", "10.244.1.3")}},
		{name: "0 to some: every entry to the cluster IP", prev: UDPState{"a": vip()}, next: UDPState{"a": vip("10.244.1.2")},
			want: []string{"-D -p udp --orig-dst 10.96.0.10"}},
		{name: "new service with endpoints: its cluster IP", prev: UDPState{}, next: UDPState{"a": vip("10.244.1.2")},
			want: []string{"-D -p udp --orig-dst 10.96.0.10"}},
		{name: "service deleted: every address and the NodePort", prev: UDPState{"np": np}, next: UDPState{},
			want: []string{"-D -p udp --orig-dst 10.96.0.11 --dst-nat 10.244.1.9", "-D -p udp --orig-dst 192.0.2.8 --dst-nat 10.244.1.9", "-D -p udp --dport 30053 --dst-nat 10.244.1.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range StaleConntrack(tt.prev, tt.next) {
				got = append(got, strings.Join(f.Args(), " "))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("flushes %q, want %q", got, tt.want)
			}
		})
	}
}

// TestConntrackFlushInNetns: a UDP client in a network namespace keeps one socket (one conntrack
// entry) to a cluster IP; when the service's endpoint is replaced, the proxier deletes the entry
// NATed to the old one, so the same socket's next datagram reaches the new endpoint instead of
// following the stale entry to the gone one. In both modes.
func TestConntrackFlushInNetns(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { testConntrackFlushInNetns(t, mode) })
	}
}

func testConntrackFlushInNetns(t *testing.T, mode string) {
	ns, host := testNetns(t)
	if mode == ModeNftables {
		requireNft(t)
	}
	if _, err := exec.LookPath("conntrack"); err != nil {
		t.Skip("conntrack not installed")
	}
	epNS, epA := endpointNetns(t, ns)
	epB := strings.TrimSuffix(epA, ".2") + ".3"
	netnstest.MustRun(t, "ip", "-n", epNS, "addr", "add", epB+"/24", "dev", "veth1")
	for _, addr := range []string{epA, epB} {
		udpEcho(t, epNS, addr+":9000", addr+" ")
	}
	cfg := Config{Prefix: NodePrefix(t.Name()), NodeName: "node-a",
		ClusterCIDR: netipPrefix("10.250.0.0/16"), ServiceCIDR: netipPrefix("10.96.8.0/24")}
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, client, Options{Config: cfg, Mode: mode, Device: "skp1", Host: host, MinSyncInterval: 20 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	}()
	t.Cleanup(func() { cancel(); <-done })
	if _, err := client.CoreV1().Services("ns").Create(ctx, makeSvc("echo", "10.96.8.12").port("echo", 5300, udp).obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := makeSlice("echo", "echo", 9000, udp, readyEp(epA, "node-b"))
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rule to endpoint A", func() (bool, string) {
		s := nodeRules(t, host, cfg.Prefix)
		return strings.Contains(s, epA+":9000"), s
	})

	var conn net.Conn
	inNetns(t, ns, func() {
		var err error
		if conn, err = net.Dial("udp4", "10.96.8.12:5300"); err != nil {
			t.Error(err)
		}
	})
	if conn == nil {
		t.FailNow()
	}
	defer conn.Close()
	ask := func(msg string) string {
		t.Helper()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 512)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		return string(buf[:n])
	}
	if got := ask("one"); got != epA+" one" {
		t.Fatalf("first datagram answered %q, want endpoint A", got)
	}

	// Endpoint A goes, B comes.
	slice.Endpoints = makeSlice("echo", "echo", 9000, udp, readyEp(epB, "node-b")).Endpoints
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rule to B and A's conntrack entry gone", func() (bool, string) {
		s := nodeRules(t, host, cfg.Prefix)
		out, _ := exec.Command("ip", "netns", "exec", ns, "conntrack", "-L", "-p", "udp", "--orig-dst", "10.96.8.12").CombinedOutput()
		return strings.Contains(s, epB+":9000") && !strings.Contains(s, epA+":9000") && !strings.Contains(string(out), "src="+epA), s + string(out)
	})
	if got := ask("two"); got != epB+" two" {
		t.Errorf("same socket after the endpoint changed answered %q, want endpoint B", got)
	}
}

func TestConntrackWrites(t *testing.T) {
	def := DefaultConntrackTimeouts()
	for _, tt := range []struct {
		name    string
		current map[string]int
		want    ConntrackTimeouts
		writes  []SysctlWrite
	}{
		{name: "kernel defaults raised to kube-proxy's",
			current: map[string]int{sysctlTCPEstablished: 432000, sysctlTCPCloseWait: 60}, want: def,
			writes: []SysctlWrite{{sysctlTCPEstablished, 86400}, {sysctlTCPCloseWait, 3600}}},
		{name: "already right: nothing written",
			current: map[string]int{sysctlTCPEstablished: 86400, sysctlTCPCloseWait: 3600}, want: def},
		{name: "zero leaves the node's value",
			current: map[string]int{sysctlTCPEstablished: 1, sysctlTCPCloseWait: 60}, want: ConntrackTimeouts{TCPCloseWait: 2 * time.Hour},
			writes: []SysctlWrite{{sysctlTCPCloseWait, 7200}}},
		{name: "an unreadable sysctl is not written",
			current: map[string]int{sysctlTCPCloseWait: 60}, want: def,
			writes: []SysctlWrite{{sysctlTCPCloseWait, 3600}}},
		{name: "below a second is no timeout", current: map[string]int{sysctlTCPCloseWait: 60}, want: ConntrackTimeouts{TCPCloseWait: time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := conntrackWrites(tt.current, tt.want); !slices.Equal(got, tt.writes) {
				t.Errorf("writes = %v, want %v", got, tt.writes)
			}
		})
	}
}
