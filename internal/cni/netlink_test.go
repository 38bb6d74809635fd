package cni

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestMain serves the plugin when the test binary runs under the plugin's name (see
// TestPluginProtocol), as the skiff binary does.
func TestMain(m *testing.M) {
	if IsPluginName(os.Args[0]) {
		os.Exit(Main(os.Getenv, os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

func requireNetAdmin(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
}

func suffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testNetns creates a named network namespace removed at the end of the test.
func testNetns(t testing.TB, name string) string {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return "/var/run/netns/" + name
}

type recorded struct {
	mu       sync.Mutex
	iptables [][]string
	sysctls  []string
}

// testHost is a host whose "node" is a network namespace of the test's own; iptables and sysctls
// are recorded, not run.
func testHost(t *testing.T, nodeNS string) (*host, *recorded) {
	t.Helper()
	ns, err := netns.GetFromPath(nodeNS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	rec := &recorded{}
	return &host{
		nl: nl,
		iptables: func(_ context.Context, _ bool, args ...string) error {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.iptables = append(rec.iptables, args)
			if slices.Contains(args, "-C") {
				return fmt.Errorf("no such rule")
			}
			return nil
		},
		sysctl: func(path, value string) error {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.sysctls = append(rec.sysctls, path+"="+value)
			return nil
		},
		bootID: func() string { return "boot-1" },
	}, rec
}

func inNetns(t *testing.T, nsPath string, args ...string) string {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"--net=" + nsPath, "--"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("in %s: %s: %v: %s", nsPath, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestAttachDetach(t *testing.T) {
	requireNetAdmin(t)
	id := suffix(t)
	nodeNS := testNetns(t, "skcni-node-"+id)
	podNS := testNetns(t, "skcni-pod-"+id)
	h, rec := testHost(t, nodeNS)
	n, err := ParseConf([]byte(`{"cniVersion":"1.0.0","name":"t","type":"skiff-bridge","bridge":"skbr` + id[:6] + `","subnets":["10.250.41.0/24"],"stateDir":"` + t.TempDir() + `","hairpinMode":true,"ipMasq":true}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	br, err := h.ensureBridge(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rec.sysctls, "net/ipv4/ip_forward=1") || len(rec.iptables) == 0 {
		t.Errorf("bridge creation: sysctls %v, iptables %v", rec.sysctls, rec.iptables)
	}
	masq := len(rec.iptables)
	// A second sandbox finds the bridge and the marker: no iptables run again.
	if _, err := h.ensureBridge(ctx, n); err != nil || len(rec.iptables) != masq {
		t.Fatalf("second ensureBridge: %v, iptables %v", err, rec.iptables[masq:])
	}
	if !strings.Contains(inNetns(t, nodeNS, "ip", "-4", "addr", "show", "dev", n.Conf.Bridge), "10.250.41.1/24") {
		t.Error("bridge lacks the gateway address")
	}

	a := Args{Command: "ADD", ContainerID: "c-" + id, Netns: podNS, IfName: "eth0"}
	pod := netip.MustParseAddr("10.250.41.2")
	for attempt := range 2 { // ADD retried: the veth is replaced
		links, err := h.attach(br, n, a, []netip.Addr{pod})
		if err != nil {
			t.Fatalf("attach %d: %v", attempt, err)
		}
		if links.podMAC == "" || links.hostMAC == "" {
			t.Errorf("MACs %+v", links)
		}
	}
	if err := h.check(n, a, []netip.Addr{pod}); err != nil {
		t.Fatalf("check: %v", err)
	}
	if out := inNetns(t, podNS, "ip", "route", "show", "default"); !strings.Contains(out, "via 10.250.41.1 dev eth0") {
		t.Errorf("pod's default route: %q", out)
	}
	veth := HostVethName(a.ContainerID, a.IfName)
	if out := inNetns(t, nodeNS, "ip", "-d", "link", "show", "dev", veth); !strings.Contains(out, "master "+n.Conf.Bridge) || !strings.Contains(out, "hairpin on") {
		t.Errorf("host veth: %q", out)
	}
	// The node reaches the pod over the bridge (all inside the test's namespaces).
	ping(t, nodeNS, pod.String())

	for range 2 { // DEL is idempotent
		if err := h.detach(a); err != nil {
			t.Fatalf("detach: %v", err)
		}
	}
	if err := h.check(n, a, []netip.Addr{pod}); err == nil {
		t.Error("check passes after detach")
	}
	if out := inNetns(t, podNS, "ip", "link"); strings.Contains(out, "eth0") {
		t.Errorf("eth0 left in the pod: %s", out)
	}
}

// TestPluginProtocol runs the plugin as containerd does: an exec of the binary under the plugin's
// name with the CNI environment and the config on stdin, in a network namespace standing in for
// the node (its iptables and sysctls are the namespace's own).
func TestPluginProtocol(t *testing.T) {
	requireNetAdmin(t)
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("needs iptables")
	}
	id := suffix(t)
	nodeNS := testNetns(t, "skcni-node-"+id)
	podNS := testNetns(t, "skcni-pod-"+id)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(t.TempDir(), Type)
	if err := os.Symlink(self, plugin); err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	raw, err := RenderList(ListConfig{Name: "t" + id, Bridge: "skbr" + id[:6], Subnets: []string{"10.250.42.0/24"}, StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Plugins []map[string]any `json:"plugins"`
	}
	_ = json.Unmarshal(raw, &list)
	conf := list.Plugins[0]
	conf["cniVersion"], conf["name"] = "1.0.0", "t"+id
	// skiff's own list leaves masquerading to internal/podnet; the plugin still masquerades for a
	// configuration that asks, and this test checks that it does.
	conf["ipMasq"] = true
	stdin, _ := json.Marshal(conf)

	run := func(command, containerID string) (string, error) {
		cmd := exec.Command("nsenter", "--net="+nodeNS, "--", plugin)
		cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + containerID, "CNI_NETNS=" + podNS, "CNI_IFNAME=eth0", "CNI_PATH=" + filepath.Dir(plugin), "PATH=" + os.Getenv("PATH")}
		cmd.Stdin = bytes.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = &out
		err := cmd.Run()
		return out.String(), err
	}
	out, err := run("ADD", "c1-"+id)
	if err != nil {
		t.Fatalf("ADD: %v: %s", err, out)
	}
	var result struct {
		CNIVersion string `json:"cniVersion"`
		Interfaces []struct {
			Name, Sandbox string
		} `json:"interfaces"`
		IPs []struct {
			Address   string `json:"address"`
			Interface int    `json:"interface"`
		} `json:"ips"`
	}
	if err := json.Unmarshal([]byte(out), &result); err != nil || len(result.IPs) != 1 {
		t.Fatalf("ADD result %s: %v", out, err)
	}
	if result.IPs[0].Address != "10.250.42.2/24" || result.Interfaces[result.IPs[0].Interface].Sandbox != podNS {
		t.Errorf("ADD result %s", out)
	}
	if out, err := run("CHECK", "c1-"+id); err != nil {
		t.Fatalf("CHECK: %v: %s", err, out)
	}
	if rules := inNetns(t, nodeNS, "iptables", "-t", "nat", "-S", "POSTROUTING"); !strings.Contains(rules, MasqueradeChain("t"+id)) {
		t.Errorf("no masquerade jump in the node's POSTROUTING:\n%s", rules)
	}
	ping(t, nodeNS, "10.250.42.2")
	// The lease is on disk under the state dir.
	if _, err := os.Stat(filepath.Join(stateDir, "t"+id, "10.250.42.2")); err != nil {
		t.Errorf("lease file: %v", err)
	}
	for i := range 2 {
		if out, err := run("DEL", "c1-"+id); err != nil {
			t.Fatalf("DEL %d: %v: %s", i, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, "t"+id, "10.250.42.2")); !os.IsNotExist(err) {
		t.Errorf("lease after DEL: %v", err)
	}
	out, err = run("CHECK", "c1-"+id)
	var cniErr Error
	if err == nil || json.Unmarshal([]byte(out), &cniErr) != nil || cniErr.Code == 0 {
		t.Errorf("CHECK after DEL: %v, %s; want a CNI error", err, out)
	}
	// Bad input: a CNI error on stdout, never a crash.
	stdin = []byte(`{"cniVersion":"1.0.0","type":"skiff-bridge"}`)
	out, err = run("ADD", "c2-"+id)
	if err == nil || json.Unmarshal([]byte(out), &cniErr) != nil || cniErr.Code != codeInvalidConfig {
		t.Errorf("ADD with a bad config: %v, %s", err, out)
	}
}

// ping sends one echo from inside nsPath (busybox's ping; the machine has no other).
func ping(t *testing.T, nsPath, addr string) {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Log("no busybox: reachability not checked")
		return
	}
	inNetns(t, nsPath, bb, "ping", "-c", "1", "-W", "5", addr)
}
