package containerdtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/images"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// Env is a running containerd with the test images imported.
type Env struct {
	Supervisor *containerd.Supervisor
	Runtime    *cri.Client
	// DataDir is the node data dir the instance lives under.
	DataDir string
	// PodCIDR is the range pods get addresses from.
	PodCIDR string
	// Bridge and Network name the CNI bridge and network list.
	Bridge, Network string
	// BusyboxImageID is the image ID of images.BusyboxImage.
	BusyboxImageID string
}

// Require skips t unless a real runtime can be used; in CI a missing runtime
// fails the test instead.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	for _, bin := range []string{"containerd", "ctr", "runc", "iptables", "nsenter"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		missing = append(missing, "containernetworking-plugins")
	}
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("CI") != "" || os.Getenv("SKIFF_E2E_RUNTIME") == "1" {
		t.Fatalf("real runtime required but missing %v (run hack/install-runtime.sh as root)", missing)
	}
	t.Skipf("real runtime not available (missing %v); run hack/install-runtime.sh", missing)
}

// RandomSuffix returns n random bytes in hex, for unique host-level names.
func RandomSuffix(n int) string { return randomHex(n) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// FreePodCIDR picks a 10.2xx.y.0/24 that no host route overlaps.
func FreePodCIDR() (string, error) {
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return "", fmt.Errorf("ip route: %w", err)
	}
	var used []netip.Prefix
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		for _, f := range fields {
			if p, err := netip.ParsePrefix(f); err == nil {
				used = append(used, p)
			} else if a, err := netip.ParseAddr(f); err == nil && a.Is4() {
				used = append(used, netip.PrefixFrom(a, 32))
			}
		}
	}
	for attempt := 0; attempt < 64; attempt++ {
		b := make([]byte, 2)
		_, _ = rand.Read(b)
		candidate := netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", 200+int(b[0])%50, b[1]))
		if !slices.ContainsFunc(used, candidate.Overlaps) {
			return candidate.String(), nil
		}
	}
	return "", fmt.Errorf("no free pod CIDR in 10.200.0.0/13")
}

// Start runs containerd for the test and registers its cleanup.
func Start(t testing.TB) *Env {
	t.Helper()
	Require(t)
	// A short path: containerd's socket must fit in 108 bytes.
	dataDir, err := os.MkdirTemp("", "skiff-rt-")
	if err != nil {
		t.Fatal(err)
	}
	suffix := randomHex(3)
	podCIDR, err := FreePodCIDR()
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{DataDir: dataDir, PodCIDR: podCIDR, Bridge: "skt" + suffix, Network: "skiff-test-" + suffix}

	restore := snapshotHost(t)
	cfg := containerd.Default(dataDir)
	if err := containerd.WriteCNIConfig(cfg.CNIConfDir, containerd.CNINetwork{Name: env.Network, Bridge: env.Bridge, PodCIDRs: []string{podCIDR}}); err != nil {
		t.Fatal(err)
	}
	sup, err := containerd.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.Supervisor = sup
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if err := sup.Run(ctx); err != nil {
			t.Errorf("containerd supervisor: %v", err)
		}
	}()
	t.Cleanup(func() {
		if env.Runtime != nil {
			RemoveAllPods(t, env.Runtime)
			env.Runtime.Close()
		}
		cancel()
		<-finished
		UnmountUnder(t, dataDir)
		restore(env.Bridge, env.Network)
		if err := os.RemoveAll(dataDir); err != nil {
			t.Errorf("remove %s: %v", dataDir, err)
		}
	})
	select {
	case <-sup.Ready():
	case <-time.After(60 * time.Second):
		log, _ := os.ReadFile(cfg.LogPath())
		t.Fatalf("containerd not ready after 60s; log:\n%s", log)
	}
	client, err := cri.Dial(sup.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	env.Runtime = client

	imageDir := filepath.Join(dataDir, "images")
	for _, build := range []func() (string, error){
		func() (string, error) { return images.BuildPause(imageDir) },
		func() (string, error) { return images.BuildBusybox(imageDir, images.BusyboxImage, nil) },
	} {
		archive, err := build()
		if err != nil {
			t.Fatal(err)
		}
		if err := images.Import(ctx, sup.Address(), archive); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(archive, "busybox") {
			env.BusyboxImageID, _ = images.ImageID(archive)
		}
	}
	waitNetworkReady(t, client)
	return env
}

func waitNetworkReady(t testing.TB, rt cri.Runtime) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, err := rt.Status(context.Background())
		if err == nil {
			ready := 0
			for _, c := range status.GetConditions() {
				if (c.Type == runtimeapi.RuntimeReady || c.Type == runtimeapi.NetworkReady) && c.Status {
					ready++
				}
			}
			if ready == 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime not ready: %v %v", status, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// RemoveAllPods stops and removes every sandbox of the runtime.
func RemoveAllPods(t testing.TB, rt cri.Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, s := range sandboxes {
		if err := rt.StopPodSandbox(ctx, s.Id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := rt.RemovePodSandbox(ctx, s.Id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// UnmountUnder lazily unmounts anything left mounted below dir (container
// rootfs, sandbox shm), deepest first.
func UnmountUnder(t testing.TB, dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			mounts = append(mounts, fields[4])
		}
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", m, err)
		}
	}
}

// snapshotHost records the host state the CNI plugins change and returns a
// function restoring it once the test's sandboxes are gone.
// ProtectHost records the host state CNI changes now and restores it when
// the test ends: call it before the runtime starts, with the bridge and
// network names the test's CNI configuration uses.
func ProtectHost(t testing.TB, bridge, network string) {
	restore := snapshotHost(t)
	t.Cleanup(func() { restore(bridge, network) })
}

func snapshotHost(t testing.TB) func(bridge, network string) {
	ipForward, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	// Directories the CNI plugins create on first use; removed again (when
	// empty) only if they did not exist before.
	var absentDirs []string
	for _, dir := range []string{"/var/lib/cni/networks", "/var/lib/cni/results", "/var/lib/cni", "/var/run/netns"} {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			absentDirs = append(absentDirs, dir)
		}
	}
	chainsBefore := map[string][]string{}
	for _, table := range []string{"nat", "filter"} {
		chainsBefore[table] = chains(table)
	}
	return func(bridge, network string) {
		if len(ipForward) > 0 {
			_ = os.WriteFile("/proc/sys/net/ipv4/ip_forward", ipForward, 0o644)
		}
		if out, err := exec.Command("ip", "link", "del", bridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
			t.Logf("delete bridge %s: %v %s", bridge, err, out)
		}
		for table, before := range chainsBefore {
			removeNewCNIChains(t, table, before, network)
		}
		_ = os.RemoveAll(filepath.Join("/var/lib/cni/networks", network))
		results, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", network+"-*"))
		for _, r := range results {
			_ = os.Remove(r)
		}
		for _, dir := range absentDirs {
			_ = os.Remove(dir)
		}
	}
}

func chains(table string) []string {
	out, err := exec.Command("iptables", "-t", table, "-S").Output()
	if err != nil {
		return nil
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "-N" {
			names = append(names, f[1])
		}
	}
	return names
}

// removeNewCNIChains deletes what the CNI plugins left for this test's
// network only: the rules whose comment names the network, the per-container
// CNI-* chains they jump to, and shared CNI-* chains that appeared during the
// test and are empty. Other tests' networks on the same host are left alone.
func removeNewCNIChains(t testing.TB, table string, before []string, network string) {
	owned := map[string]bool{}
	all := append(builtinChains(table), chains(table)...)
	for _, chain := range all {
		rules := appendRules(table, chain)
		var numbers []int
		for i, rule := range rules {
			if !strings.Contains(rule, `\"`+network+`\"`) {
				continue
			}
			numbers = append(numbers, i+1)
			if target := jumpTarget(rule); strings.HasPrefix(target, "CNI-") && !slices.Contains(before, target) {
				owned[target] = true
			}
		}
		deleteRules(t, table, chain, numbers)
	}
	for chain := range owned {
		_ = exec.Command("iptables", "-t", table, "-F", chain).Run()
	}
	// Shared chains (CNI-HOSTPORT-*, ...) created during the test: removed
	// once empty, with the jumps to them.
	for _, c := range chains(table) {
		if strings.HasPrefix(c, "CNI-") && !slices.Contains(before, c) && !owned[c] && len(appendRules(table, c)) == 0 {
			owned[c] = true
		}
	}
	for _, chain := range all {
		var numbers []int
		for i, rule := range appendRules(table, chain) {
			if owned[jumpTarget(rule)] {
				numbers = append(numbers, i+1)
			}
		}
		deleteRules(t, table, chain, numbers)
	}
	for chain := range owned {
		if out, err := exec.Command("iptables", "-t", table, "-X", chain).CombinedOutput(); err != nil {
			t.Logf("iptables -t %s -X %s: %v %s", table, chain, err, out)
		}
	}
}

// appendRules returns a chain's rules in order ("-A ..." lines of -S), so
// rule N is element N-1.
func appendRules(table, chain string) []string {
	out, err := exec.Command("iptables", "-t", table, "-S", chain).Output()
	if err != nil {
		return nil
	}
	var rules []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "-A ") {
			rules = append(rules, line)
		}
	}
	return rules
}

func jumpTarget(rule string) string {
	f := strings.Fields(rule)
	if i := slices.Index(f, "-j"); i >= 0 && i+1 < len(f) {
		return f[i+1]
	}
	return ""
}

// deleteRules deletes rules by number, highest first so the others keep
// their numbers.
func deleteRules(t testing.TB, table, chain string, numbers []int) {
	slices.Sort(numbers)
	slices.Reverse(numbers)
	for _, n := range numbers {
		if out, err := exec.Command("iptables", "-t", table, "-D", chain, strconv.Itoa(n)).CombinedOutput(); err != nil {
			t.Logf("iptables -t %s -D %s %d: %v %s", table, chain, n, err, out)
		}
	}
}

func builtinChains(table string) []string {
	if table == "nat" {
		return []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"}
	}
	return []string{"INPUT", "FORWARD", "OUTPUT"}
}
