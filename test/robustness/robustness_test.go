package robustness

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd/containerdtest"
	"k8s.io/utils/clock"
)

var (
	flagDuration = flag.Duration("robustness.duration", 20*time.Second, "traffic time per scenario")
	flagScenario = flag.String("robustness.scenario", "", "run only this scenario (default: the short set)")
	flagAll      = flag.Bool("robustness.all", false, "run every scenario (default: the short set)")
	flagReport   = flag.String("robustness.report", "", "directory for the history and report of a failing run (default: a temp dir kept on failure)")
	flagSeed     = flag.Uint64("robustness.seed", 0, "seed of traffic and faults (0: from the time)")
	flagBin      = flag.String("robustness.bin", "", "a built skiff binary (default: build one)")
	flagKeep     = flag.Bool("robustness.keep", false, "write the report of passing runs too")
	flagInterval = flag.Duration("robustness.interval", 20*time.Millisecond, "pause between two calls of one client (long runs: larger, to keep histories checkable)")
)

// shortSet are the scenarios run unless one or all are asked for: a few minutes, for CI.
func shortSet() []string {
	return []string{"single-kill", "single-pause", "single-compact", "single-restore", "ha-kill-etcd-leader", "ha-partition", "ext-pause-etcd", "workers-kill-etcd-leader"}
}

// skiffBinary builds skiff once for the test, unless -robustness.bin names one.
func skiffBinary(t *testing.T) string {
	t.Helper()
	if *flagBin != "" {
		return *flagBin
	}
	bin := filepath.Join(t.TempDir(), "skiff")
	build := exec.Command("go", "build", "-o", bin, "github.com/skiff-sh/skiff/cmd/skiff")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build skiff: %v\n%s", err, out)
	}
	return bin
}

// TestRobustness runs each scenario: a cluster, recorded traffic with watches and informers,
// scheduled faults, then every check on the history. A failing run keeps its history and report.
func TestRobustness(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the scenarios start skiff servers, which need root")
	}
	var run []Scenario
	for _, s := range Scenarios() {
		switch {
		case *flagScenario != "":
			if s.Name == *flagScenario {
				run = append(run, s)
			}
		case *flagAll || slices.Contains(shortSet(), s.Name):
			run = append(run, s)
		}
	}
	if len(run) == 0 {
		t.Fatalf("no scenario named %q", *flagScenario)
	}
	duration := *flagDuration
	checkDisk(t)
	bin := skiffBinary(t)
	for _, s := range run {
		t.Run(s.Name, func(t *testing.T) { runScenario(t, bin, s, duration) })
	}
}

func runScenario(t *testing.T, bin string, s Scenario, duration time.Duration) {
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("scenario %s, %s of traffic, seed %d", s.Name, duration, seed)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	clk := clock.RealClock{}
	ctx, cancel := context.WithTimeout(context.Background(), duration+10*time.Minute)
	defer cancel()
	cl := startCluster(t, ctx, bin, s, seed, clk)
	// Pauses of 5-30 s, the longest a third of the run so that a short run has some.
	pause := ScheduleConfig{Kind: s.Fault, Nodes: s.Nodes, Duration: duration, Warmup: 3 * time.Second,
		Cooldown: 3 * time.Second, Gap: 4 * time.Second, PauseMin: 5 * time.Second, PauseMax: max(5*time.Second, min(30*time.Second, duration/3)), Seed: seed}
	started := time.Now()
	h, err := Run(ctx, RunConfig{
		Scenario: s, Cluster: cl, Duration: duration, Schedule: pause, Logger: logger,
		Traffic: TrafficConfig{Keys: []string{"k0", "k1", "k2", "k3", "k4"}, Interval: *flagInterval, Timeout: 3 * time.Second, Seed: seed},
	})
	base := *flagReport
	if base == "" {
		base = os.TempDir()
	}
	dir := ReportDir(base, s.Name, time.Now())
	if err != nil {
		for _, n := range cl.Nodes {
			t.Logf("node %s log tail:\n%s", n.Name, n.Log(3000))
		}
		keepLogs(t, dir, cl)
		t.Fatalf("run: %v", err)
	}
	checkStart := time.Now()
	r := Check(h, CheckOptions{LinearizabilityTimeout: 2 * time.Minute})
	t.Logf("%s: %s; %d faults; ran %s, checked in %s", s.Name, r.Summary(), len(h.Faults),
		checkStart.Sub(started).Round(time.Second), time.Since(checkStart).Round(time.Millisecond))
	for _, f := range h.Faults {
		if f.Error != "" {
			t.Errorf("fault %s: %s", f.Name, f.Error)
		}
	}
	if r.Writes == 0 || r.Events == 0 {
		t.Errorf("the run recorded %d writes and %d watch events: no traffic to check", r.Writes, r.Events)
	}
	oc := CountObjects(h.Objects)
	t.Logf("control plane: %d pods (%d bound), %d ReplicaSet versions, %d Lease versions, %d gaps", oc.Pods, oc.Bound, oc.ReplicaSetVersions, oc.LeaseVersions, len(h.ObjectGaps))
	if oc.Bound == 0 || oc.LeaseVersions == 0 {
		t.Errorf("the control-plane record has %d bound pods and %d Lease versions: nothing to judge", oc.Bound, oc.LeaseVersions)
	}
	for _, w := range cl.Workers {
		t.Logf("worker %s ran %d pods", w.Name, oc.RunningOn[w.Name])
	}
	if len(cl.Workers) > 0 && len(oc.RunningOn) == 0 {
		t.Errorf("no worker ran a pod: the kubelets were not judged")
	}
	if len(r.Violations) == 0 && !*flagKeep && !t.Failed() {
		return
	}
	files, err := WriteReport(dir, h, r)
	if err != nil {
		t.Errorf("write report: %v", err)
	}
	t.Logf("report: %s", strings.Join(files, " "))
	if len(r.Violations) > 0 || t.Failed() {
		keepLogs(t, dir, cl)
	}
	for i, v := range r.Violations {
		if i == 30 {
			t.Errorf("... %d more in %s", len(r.Violations)-30, dir)
			break
		}
		t.Errorf("%s", v)
	}
}

// startCluster starts one node, or three stacked control planes on 127.0.0.2-4 sharing port
// numbers (the second and third join with a control-plane token, as in the e2e HA tests).
func startCluster(t *testing.T, ctx context.Context, bin string, s Scenario, seed uint64, clk clock.WithTicker) *Cluster {
	t.Helper()
	nodes := s.Nodes
	ports := NewPorts(seed)
	cl := &Cluster{Clock: clk}
	if s.Fault == FaultPartition || s.Fault == FaultPartitionOneWay {
		// Removed last: after the nodes have stopped (cleanups run in reverse).
		name := fmt.Sprintf("skiff-robustness-%d-%d", os.Getpid(), seed%1e6)
		cg, err := NewCgroups(name)
		if err != nil {
			t.Fatalf("partitions need a cgroup per node: %v", err)
		}
		t.Cleanup(func() {
			if err := cg.Remove(); err != nil {
				t.Errorf("remove cgroups: %v", err)
			}
		})
		cl.Cgroups, cl.Partitions = cg, NewPartitions(name)
	}
	if s.ExternalEtcd {
		cl.External = startExternalEtcd(t, ctx, ports, clk)
	}
	newNode := func(name, addr string, like *Node) *Node {
		dir := filepath.Join(t.TempDir(), name)
		if s.Fault == FaultFullDisk {
			dir = diskOfItsOwn(t, dir)
		}
		n, err := NewNode(bin, dir, name, addr, ports, like)
		if err != nil {
			t.Fatal(err)
		}
		if cl.External != nil {
			n.EtcdServers = cl.External.URL()
		}
		if cl.Cgroups != nil {
			if n.Cgroup, err = cl.Cgroups.Node(name); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	var network *Net
	if s.Workers > 0 {
		network = startNet(t)
	}
	// address is node i's (from 1): on loopback (127.0.0.1 alone, 127.0.0.2-4 for three), or a
	// namespace of its own on the test's bridge when the cluster has workers.
	address := func(i int) (string, *Host) {
		if network == nil {
			if nodes == 1 {
				return "127.0.0.1", nil
			}
			return fmt.Sprintf("127.0.0.%d", i+1), nil
		}
		h, err := network.AddHost()
		if err != nil {
			t.Fatal(err)
		}
		return h.IP, h
	}
	addr, host := address(1)
	first := newNode("rb-1", addr, nil)
	first.Netns = host
	cl.Nodes = append(cl.Nodes, first)
	t.Cleanup(func() {
		if cl.Partitions != nil {
			if err := cl.Partitions.HealAll(); err != nil {
				t.Errorf("heal partitions: %v", err)
			}
		}
		if len(cl.Workers) > 0 {
			dctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			if err := cl.DrainWorkers(dctx); err != nil {
				t.Logf("drain the workers: %v", err)
			}
			cancel()
		}
		for _, n := range cl.Workers {
			n.Stop()
			// The mounts its pods left, then its data dir (made by newWorker, outside t's).
			containerdtest.UnmountUnder(t, n.DataDir)
			os.RemoveAll(n.DataDir)
		}
		for _, n := range cl.Nodes {
			n.Stop()
		}
	})
	startNode(t, ctx, first, clk)
	server := fmt.Sprintf("https://%s:%d", first.Addr, first.HTTPSPort)
	if nodes > 1 {
		token := createToken(t, ctx, first, "--control-plane")
		for i := 2; i <= nodes; i++ {
			addr, host := address(i)
			n := newNode(fmt.Sprintf("rb-%d", i), addr, first)
			n.Netns, n.Join = host, []string{"--server", server, "--token", token}
			cl.Nodes = append(cl.Nodes, n)
			startNode(t, ctx, n, clk)
		}
	}
	if s.Workers == 0 {
		return cl
	}
	token := createToken(t, ctx, first)
	for i := 1; i <= s.Workers; i++ {
		addr, host := address(nodes + i)
		n := newWorker(t, bin, fmt.Sprintf("rb-w%d", i), addr, first)
		n.Netns, n.Join = host, []string{"--server", server, "--token", token}
		cl.Workers = append(cl.Workers, n)
		startNode(t, ctx, n, clk)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := cl.WaitWorkersReady(wctx); err != nil {
		t.Fatal(err)
	}
	return cl
}

// createToken makes a join token on n (extra: --control-plane for a control plane's).
func createToken(t *testing.T, ctx context.Context, n *Node, extra ...string) string {
	t.Helper()
	args := append([]string{"token", "create", "--data-dir", n.DataDir, "--ttl", "1h"}, extra...)
	out, err := n.command(ctx, n.Bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("skiff token create: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// startNet makes the bridge a scenario with workers puts every node on, removed when the test
// ends (after the nodes: cleanups run in reverse).
func startNet(t *testing.T) *Net {
	t.Helper()
	for _, bin := range []string{"ip", "nsenter", "containerd", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing with CI set (hack/install-runtime.sh installs the runtime)", bin)
			}
			t.Skipf("workers need %s", bin)
		}
	}
	network, err := NewNet()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := network.Remove(); err != nil {
			t.Errorf("remove the test network: %v", err)
		}
	})
	return network
}

// newWorker prepares a worker joining cp's cluster, on cp's port numbers in a namespace of its
// own. Its data dir is short (containerd's socket path has a limit); startCluster's cleanup
// removes it once the node stopped.
func newWorker(t *testing.T, bin, name, addr string, cp *Node) *Node {
	t.Helper()
	dir, err := os.MkdirTemp("", "skrb")
	if err != nil {
		t.Fatal(err)
	}
	return &Node{Bin: bin, DataDir: dir, Name: name, Addr: addr, Worker: true,
		Admin: filepath.Join(cp.DataDir, "admin.kubeconfig"), Kubelet: cp.Kubelet, LB: cp.LB}
}

// startExternalEtcd starts the etcd an external-etcd scenario's control planes share, stopped
// when the test ends (after the nodes: cleanups run in reverse).
func startExternalEtcd(t *testing.T, ctx context.Context, ports *Ports, clk clock.WithTicker) *ExternalEtcd {
	t.Helper()
	const bin = "/usr/bin/etcd"
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing with CI set: hack/install-etcd.sh should have installed it", bin)
		}
		t.Skipf("%s not installed (hack/install-etcd.sh)", bin)
	}
	e := &ExternalEtcd{Bin: bin, DataDir: filepath.Join(t.TempDir(), "external-etcd")}
	for _, p := range []*int{&e.Client, &e.Peer} {
		v, err := ports.Next()
		if err != nil {
			t.Fatal(err)
		}
		*p = v
	}
	if err := os.MkdirAll(e.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := e.WaitHealthy(wctx, clk); err != nil {
		t.Fatal(err)
	}
	return e
}

// fullDiskSize is the filesystem each node of a full-disk scenario has: its etcd's reserve and
// WAL, the containerd it does not run, and room for a few minutes of traffic.
const fullDiskSize = 768 << 20

// diskOfItsOwn makes dir a tmpfs of fullDiskSize, unmounted when the test ends (after the nodes
// stopped: cleanups run in reverse), so that filling it fills nothing else on the machine.
func diskOfItsOwn(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", fullDiskSize)); err != nil {
		t.Fatalf("a filesystem for %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

func startNode(t *testing.T, ctx context.Context, n *Node, clk clock.WithTicker) {
	t.Helper()
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := n.WaitReady(wctx, clk); err != nil {
		t.Fatalf("%v\n%s", err, n.Log(4000))
	}
}

// testWriter sends the runner's log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// checkDisk fails early, with the cause, when the disk holding the nodes' data cannot take them:
// skiff's etcd fence refuses writes below the nodes' DiskReserve free and each node keeps a
// reserve file and a preallocated WAL, so a run on a nearly full disk would fail with NOSPACE in
// the middle and look like a finding.
func checkDisk(t *testing.T) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &st); err != nil {
		t.Fatalf("statfs %s: %v", os.TempDir(), err)
	}
	free := st.Bavail * uint64(st.Bsize)
	const reserve = uint64(DiskReserve)
	need := 2*reserve + 3*2*etcd.ReserveSize(reserve) + 3*(64<<20)
	if free < need {
		t.Fatalf("%s has %d MiB free; a scenario of up to three nodes needs %d MiB (skiff's etcd refuses writes below %d MiB free)",
			os.TempDir(), free>>20, need>>20, reserve>>20)
	}
}

// keepLogs keeps the cluster's logs beside a failed run's report.
func keepLogs(t *testing.T, dir string, cl *Cluster) {
	kept, err := KeepLogs(dir, cl)
	if err != nil {
		t.Logf("keep logs: %v", err)
	}
	t.Logf("logs: %s", strings.Join(kept, " "))
}
