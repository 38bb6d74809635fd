package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skiff-sh/skiff/internal/netnstest"
)

// testNetns is a network namespace of the test's own, removed in cleanup; Host runs in it.
func testNetns(t testing.TB) (string, Host) {
	t.Helper()
	name := netnstest.New(t, "skpt", "iptables-restore", "iptables-save")
	return name, Host{Wrap: []string{"ip", "netns", "exec", name}}
}

// endpointNetns is a second namespace of the test's own joined to ns by a veth pair, on a
// random 10.250.X.0/24: it plays the pod. It returns its name and address.
func endpointNetns(tb testing.TB, ns string) (string, string) {
	tb.Helper()
	sub := rand.IntN(250) + 1
	nodeIP, epIP := fmt.Sprintf("10.250.%d.1", sub), fmt.Sprintf("10.250.%d.2", sub)
	epNS := ns + "e"
	netnstest.MustRun(tb, "ip", "netns", "add", epNS)
	tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", epNS).Run() })
	netnstest.MustRun(tb, "ip", "-n", ns, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1", "netns", epNS)
	netnstest.MustRun(tb, "ip", "-n", ns, "addr", "add", nodeIP+"/24", "dev", "veth0")
	netnstest.MustRun(tb, "ip", "-n", ns, "link", "set", "veth0", "up")
	netnstest.MustRun(tb, "ip", "-n", epNS, "addr", "add", epIP+"/24", "dev", "veth1")
	netnstest.MustRun(tb, "ip", "-n", epNS, "link", "set", "veth1", "up")
	netnstest.MustRun(tb, "ip", "-n", epNS, "link", "set", "lo", "up")
	return epNS, epIP
}

// waitFor polls cond until it holds or the deadline passes; the proxier syncs asynchronously.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s:\n%s", what, detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// udpEcho serves UDP on addr inside namespace ns until the test ends, answering each datagram
// with prefix followed by the datagram, so a client sees which server answered.
func udpEcho(tb testing.TB, ns, addr, prefix string) {
	tb.Helper()
	var conn net.PacketConn
	inNetns(tb, ns, func() {
		var err error
		if conn, err = net.ListenPacket("udp4", addr); err != nil {
			tb.Error(err)
		}
	})
	if conn == nil {
		tb.FailNow()
	}
	tb.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = conn.WriteTo(append([]byte(prefix), buf[:n]...), from)
		}
	}()
}

func save(t *testing.T, h Host) string {
	t.Helper()
	out, err := h.Save(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// nodeRules is everything of the node's in either backend: iptables-save and the node's table.
func nodeRules(t *testing.T, h Host, prefix string) string {
	t.Helper()
	out := save(t, h)
	if table, err := h.run(context.Background(), "", "nft", "list", "table", "ip", NftTable(prefix)); err == nil {
		out += table
	}
	return out
}

// TestProxierInNetns runs the proxier in each mode against a fake API in a network namespace of its
// own, with a real endpoint in a second namespace: a previous run's stale chain and table (of
// either mode) are removed, the cluster IP (with ClientIP affinity) reaches the endpoint from the
// node, so does the NodePort on 127.0.0.1, the endpoint reaches itself through the cluster IP
// (hairpin), a service without endpoints and a VIP without any service are refused at once, a
// deleted service leaves no rule, and a stop leaves nothing of the prefix.
func TestProxierInNetns(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { testProxierInNetns(t, mode) })
	}
}

func testProxierInNetns(t *testing.T, mode string) {
	ns, host := testNetns(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft not installed (Debian package nftables)")
	}
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skip("busybox not installed")
	}
	// The endpoint: a second namespace behind a veth pair, serving HTTP on 10.250.X.2:8080.
	epNS, epIP := endpointNetns(t, ns)
	www := t.TempDir()
	if err := os.WriteFile(www+"/index.html", []byte("hello-from-endpoint\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	httpd := exec.Command("ip", "netns", "exec", epNS, "busybox", "httpd", "-f", "-p", "8080", "-h", www)
	if err := httpd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = httpd.Process.Kill(); _ = httpd.Wait() })

	cfg := Config{
		Prefix: NodePrefix(t.Name()), NodeName: "node-a",
		ClusterCIDR: netip.MustParsePrefix("10.250.0.0/16"), ServiceCIDR: netip.MustParsePrefix("10.96.7.0/24"),
		NodePortAddresses: []netip.Addr{netip.MustParseAddr("127.0.0.1")},
	}
	// A previous run's leftover: a chain and its hook.
	stale := cfg.Prefix + "-SVC-STALE"
	if err := host.Restore(context.Background(), "*nat\n:"+stale+" - [0:0]\n-A PREROUTING -j "+stale+"\nCOMMIT\n"); err != nil {
		t.Fatal(err)
	}
	staleNft := "stale-nft-chain"
	if err := host.NftApply(context.Background(), fmt.Sprintf("add table ip %s\nadd chain ip %s %s\n", NftTable(cfg.Prefix), NftTable(cfg.Prefix), staleNft)); err != nil {
		t.Fatal(err)
	}

	// A UDP echo server next to it.
	udpEcho(t, epNS, epIP+":9000", "echo ")

	reg := prometheus.NewRegistry()
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	hostCloseWait, hostErr := Host{}.ReadSysctl(ctx, sysctlTCPCloseWait)
	go func() {
		done <- Run(ctx, client, Options{Config: cfg, Mode: mode, Device: "skp0", Host: host, LocalhostNodePorts: true, MinSyncInterval: 20 * time.Millisecond, Metrics: NewMetrics(reg),
			Conntrack: DefaultConntrackTimeouts(),
			Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))})
	}()
	t.Cleanup(func() { cancel(); <-done })

	// ClientIP affinity: the kernel takes its sets and the chains that use them.
	svc := makeSvc("web", "10.96.7.10").port("http", 80, tcp).nodePort(30080).affinity().obj()
	empty := makeSvc("empty", "10.96.7.11").port("http", 80, tcp).obj()
	echo := makeSvc("echo", "10.96.7.12").port("echo", 5300, udp).obj()
	slice := makeSlice("web", "http", 8080, tcp, readyEp(epIP, "node-b"))
	for _, s := range []*corev1.Service{svc, empty, echo} {
		if _, err := client.CoreV1().Services("ns").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*discoveryv1.EndpointSlice{slice, makeSlice("echo", "echo", 9000, udp, readyEp(epIP, "node-b"))} {
		if _, err := client.DiscoveryV1().EndpointSlices("ns").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the service's rules", func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("Run ended: %v", err)
		default:
		}
		s := nodeRules(t, host, cfg.Prefix)
		return strings.Contains(s, epIP+":8080") && !strings.Contains(s, stale) && !strings.Contains(s, staleNft), s
	})
	// kube-proxy's conntrack timeouts, in the node's namespace only.
	for name, want := range map[string]int{sysctlTCPCloseWait: 3600, sysctlTCPEstablished: 86400} {
		waitFor(t, name, func() (bool, string) {
			got, err := host.ReadSysctl(ctx, name)
			return err == nil && got == want, fmt.Sprintf("%d %v, want %d", got, err, want)
		})
	}
	if got, err := (Host{}).ReadSysctl(ctx, sysctlTCPCloseWait); hostErr == nil && (err != nil || got != hostCloseWait) {
		t.Errorf("the host's own close_wait timeout went from %d to %d (%v)", hostCloseWait, got, err)
	}

	wget := func(url string) (string, error) {
		out, err := exec.Command("ip", "netns", "exec", ns, "timeout", "10", "busybox", "wget", "-q", "-O", "-", url).CombinedOutput()
		return string(out), err
	}
	if out, err := wget("http://10.96.7.10/"); err != nil || !strings.Contains(out, "hello-from-endpoint") {
		t.Errorf("cluster IP from the node: %v %s", err, out)
	}
	if out, err := wget("http://127.0.0.1:30080/"); err != nil || !strings.Contains(out, "hello-from-endpoint") {
		t.Errorf("NodePort on 127.0.0.1 from the node: %v %s", err, out)
	}
	// Hairpin: the endpoint reaches itself through the cluster IP (masqueraded, or its own reply
	// would not match the connection).
	netnstest.MustRun(t, "ip", "-n", epNS, "route", "add", "10.96.7.0/24", "via", strings.TrimSuffix(epIP, ".2")+".1")
	if out, err := exec.Command("ip", "netns", "exec", epNS, "timeout", "10", "busybox", "wget", "-q", "-O", "-", "http://10.96.7.10/").CombinedOutput(); err != nil || !strings.Contains(string(out), "hello-from-endpoint") {
		t.Errorf("the endpoint through its own cluster IP (hairpin): %v %s", err, out)
	}
	inNetns(t, ns, func() {
		c, err := net.Dial("udp4", "10.96.7.12:5300")
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 512)
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Error(err)
		} else if n, err := c.Read(buf); err != nil || string(buf[:n]) != "echo ping" {
			t.Errorf("UDP through the cluster IP: %v %q", err, buf[:n])
		}
	})
	for _, url := range []string{"http://10.96.7.11/", "http://10.96.7.99/"} {
		out, err := wget(url)
		if err == nil || !strings.Contains(out, "refused") {
			t.Errorf("%s: want connection refused, got %v %s", url, err, out)
		}
	}

	if err := client.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.DiscoveryV1().EndpointSlices("ns").Delete(ctx, slice.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted service's rules to go", func() (bool, string) {
		s := nodeRules(t, host, cfg.Prefix)
		return !strings.Contains(s, "10.96.7.10") && !strings.Contains(s, epIP+":8080"), s
	})

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	syncs, last := uint64(0), 0.0
	for _, f := range families {
		switch f.GetName() {
		case "kubeproxy_sync_proxy_rules_duration_seconds":
			syncs = f.GetMetric()[0].GetHistogram().GetSampleCount()
		case "kubeproxy_sync_proxy_rules_last_timestamp_seconds":
			last = f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if syncs == 0 || last == 0 {
		t.Errorf("metrics: %d syncs observed, last sync at %v; want both set", syncs, last)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	done <- nil
	if s := nodeRules(t, host, cfg.Prefix); strings.Contains(s, cfg.Prefix) || host.NftHasTable(context.Background(), NftTable(cfg.Prefix)) {
		t.Errorf("rules left after stop:\n%s", s)
	}
	if out, _ := exec.Command("ip", "-n", ns, "link", "show", "skp0").CombinedOutput(); !strings.Contains(string(out), "does not exist") {
		t.Errorf("device left after stop: %s", out)
	}
}
