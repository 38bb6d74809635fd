package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// cluster is one running `skiff server` with its own data dir and ports.
type cluster struct {
	t          *testing.T
	bin        string
	dataDir    string
	kubeconfig string
	ports      [3]int
	// kubeletPort is chosen once, so a restarted node keeps it.
	kubeletPort int
	// lbPort is the node-local load balancer's port (chosen once, like kubeletPort).
	lbPort    int
	extraArgs []string
	// roles overrides the default etcd,controlplane (controlplane alone with --etcd-servers).
	roles string
	// kubelet leaves --control-plane-kubelet at its default (the kubelet runs where the node can)
	// instead of turning it off (kubeletOffArgs).
	kubelet bool
	cmd     *exec.Cmd
	logFile *os.File
}

var skiffBinary string

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: kubectl is required on PATH")
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "skiff-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skiffBinary = filepath.Join(dir, "skiff")
	build := exec.Command("go", "build", "-o", skiffBinary, "github.com/skiff-sh/skiff/cmd/skiff")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build skiff:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// handedOut are the ports freePort gave this test process, never given twice.
var handedOut sync.Map

// freePort is a TCP port free on every address, below the kernel's ephemeral range (32768 and
// up) and the node-port range (30000-32767): a port the kernel picked (":0") is one an outgoing
// connection from a node's own address can take before the node binds it there (the kubelet
// once failed with "address already in use" on its test-network address).
func freePort(t *testing.T) int {
	t.Helper()
	for range 1000 {
		port := 20000 + rand.IntN(10000)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatal("no free port between 20000 and 29999")
	return 0
}

// newCluster starts a control-plane node (etcd + controlplane roles) and waits for /readyz.
func newCluster(t *testing.T, extraArgs ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: skiffBinary, dataDir: t.TempDir(), extraArgs: extraArgs}
	c.ports = [3]int{freePort(t), freePort(t), freePort(t)}
	c.kubeconfig = filepath.Join(c.dataDir, "admin.kubeconfig")
	c.start()
	t.Cleanup(c.stop)
	return c
}

func (c *cluster) start() {
	c.t.Helper()
	args := c.serverArgs()
	logFile, err := os.OpenFile(filepath.Join(c.dataDir, "skiff.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	c.logFile = logFile
	c.cmd = exec.Command(c.bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.waitReady()
}

// serverArgs are the node's `skiff server` arguments.
func (c *cluster) serverArgs() []string {
	c.t.Helper()
	roles := "etcd,controlplane"
	if c.roles != "" {
		roles = c.roles
	}
	for _, a := range c.extraArgs {
		if strings.HasPrefix(a, "--etcd-servers") {
			roles = "controlplane"
		}
	}
	if c.kubeletPort == 0 {
		c.kubeletPort = freePort(c.t)
	}
	if c.lbPort == 0 {
		c.lbPort = freePort(c.t)
	}
	args := append([]string{"server", "--data-dir", c.dataDir, "--roles", roles, "--bind-address", "127.0.0.1",
		"--https-port", strconv.Itoa(c.ports[0]), "--etcd-client-port", strconv.Itoa(c.ports[1]),
		"--etcd-peer-port", strconv.Itoa(c.ports[2]), "--kubelet-port", strconv.Itoa(c.kubeletPort),
		"--lb-port", strconv.Itoa(c.lbPort)}, diskReserveArgs(c.bin)...)
	if !c.kubelet {
		args = append(args, kubeletOffArgs(c.bin, roles)...)
	}
	return append(args, c.extraArgs...)
}

// kubeletOffArgs turn off the kubelet of a node without the worker role, which these tests start
// (in the host's network namespace, on data dirs too long for containerd's socket) to be no Node;
// by default it would run one, being root with containerd. An older skiff (the upgrade tests'
// starting point) runs none there unless asked, so it gets no flag, as with diskReserveArgs.
func kubeletOffArgs(bin, roles string) []string {
	if bin != skiffBinary || slices.Contains(strings.Split(roles, ","), "worker") {
		return nil
	}
	return []string{"--control-plane-kubelet=false"}
}

// testDiskReserve is the free space the nodes of these tests keep for etcd. The disk of a test
// machine is shared with other tenants and has been seen with 1 GiB free and less: at the
// automatic threshold (1 GiB on a large disk) every write of a test then fails with NOSPACE
// though etcd has room, as kind sets the kubelet's disk eviction thresholds to 0% for the same
// reason. The full-disk tests, on a tmpfs of their own, use the automatic threshold.
const testDiskReserve = 128 << 20

// diskReserveArgs set testDiskReserve for the binary under test; an older skiff (the upgrade
// tests' starting point) may not have the flag.
func diskReserveArgs(bin string) []string {
	if bin != skiffBinary {
		return nil
	}
	return []string{"--etcd-disk-reserve-bytes", strconv.Itoa(testDiskReserve)}
}

func (c *cluster) waitReady() {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(c.kubeconfig); err == nil {
			if out, err := c.kubectlErr("get", "--raw", "/readyz"); err == nil && strings.TrimSpace(out) == "ok" {
				return
			}
		}
		if c.cmd.ProcessState != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("skiff did not become ready; log:\n%s", c.log())
}

func (c *cluster) log() string {
	data, _ := os.ReadFile(filepath.Join(c.dataDir, "skiff.log"))
	if len(data) > 8000 {
		data = data[len(data)-8000:]
	}
	return string(data)
}

// logAll is the server's whole log.
func (c *cluster) logAll() string {
	data, _ := os.ReadFile(filepath.Join(c.dataDir, "skiff.log"))
	return string(data)
}

// dumpState logs what a failed test needs to find out why: the pods and where they stand, the
// latest events, and the warnings and errors at the end of the node's log.
func (c *cluster) dumpState() {
	c.t.Helper()
	for _, args := range [][]string{
		{"get", "pods", "-A", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
	} {
		out, _ := c.kubectlErr(args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		c.t.Logf("kubectl %s:\n%s", strings.Join(args, " "), strings.Join(lines, "\n"))
	}
	var problems []string
	for _, l := range strings.Split(c.logAll(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			problems = append(problems, l)
		}
	}
	if len(problems) > 60 {
		problems = problems[len(problems)-60:]
	}
	c.t.Logf("the node's last warnings and errors:\n%s", strings.Join(problems, "\n"))
}

// kill stops skiff with SIGKILL, as a crash would.
func (c *cluster) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
		_, _ = c.cmd.Process.Wait()
	}
	if c.logFile != nil {
		c.logFile.Close()
	}
	c.cmd = nil
}

func (c *cluster) stop() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _, _ = c.cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-done
		}
	}
	if c.logFile != nil {
		c.logFile.Close()
	}
	c.cmd = nil
}

func (c *cluster) kubectlCmd(ctx context.Context, stdin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig, "KUBECTL_EXTERNAL_DIFF=", "HOME="+c.dataDir)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd
}

// kubectlErr runs kubectl and returns combined output and the error.
func (c *cluster) kubectlErr(args ...string) (string, error) {
	return c.kubectlIn("", args...)
}

func (c *cluster) kubectlIn(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := c.kubectlCmd(ctx, stdin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// kubectl runs kubectl and fails the test on error.
func (c *cluster) kubectl(args ...string) string {
	c.t.Helper()
	out, err := c.kubectlErr(args...)
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// apply pipes a manifest into kubectl with args ("apply", "-f", "-", ...).
func (c *cluster) stdin(manifest string, args ...string) string {
	c.t.Helper()
	out, err := c.kubectlIn(manifest, args...)
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

func mustNotContain(t *testing.T, out string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(out, w) {
			t.Fatalf("output has %q:\n%s", w, out)
		}
	}
}

// eventually retries f until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("condition not met in %s: %v", timeout, err)
}

func execOutput(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
