package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/kubelet/containerd/containerdtest"
)

// A reusable multi-node harness: a bridge on the host with an address of its own (where the
// control plane binds), and hosts in their own network namespaces wired to it by veth pairs. Every
// name carries a random per-test id, every address comes from one 172.31.<n>.0/24 the test picks
// unused, and everything is removed in t.Cleanup. Worker processes run under
// `nsenter --net=/var/run/netns/NAME` (not `ip netns exec`, which remounts /sys and breaks the
// cgroups containerd needs).

// testNet is one test's bridge and subnet.
type testNet struct {
	t      *testing.T
	id     string
	bridge string
	prefix string // "172.31.<n>"
	hosts  int
}

// netHost is a host in its own network namespace on a testNet.
type netHost struct {
	net  *testNet
	ns   string
	IP   string
	veth string
}

func randomID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// newTestNet creates the bridge with the subnet's .1 on the host.
func newTestNet(t *testing.T) *testNet {
	t.Helper()
	requireRuntime(t)
	for _, bin := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed", bin)
		}
	}
	n := &testNet{t: t, id: randomID(t)}
	n.bridge = "skjb" + n.id
	used, _ := exec.Command("ip", "-4", "addr").CombinedOutput()
	routes, _ := exec.Command("ip", "-4", "route").CombinedOutput()
	for range 50 {
		v, err := rand.Int(rand.Reader, big.NewInt(150))
		if err != nil {
			t.Fatal(err)
		}
		p := "172.31." + strconv.Itoa(100+int(v.Int64()))
		if !strings.Contains(string(used), p+".") && !strings.Contains(string(routes), p+".") {
			n.prefix = p
			break
		}
	}
	if n.prefix == "" {
		t.Fatal("no free 172.31.x.0/24 subnet")
	}
	run(t, "ip", "link", "add", n.bridge, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", n.bridge).Run() })
	run(t, "ip", "addr", "add", n.prefix+".1/24", "dev", n.bridge)
	run(t, "ip", "link", "set", n.bridge, "up")
	return n
}

// HostIP is the host side's address on the bridge.
func (n *testNet) HostIP() string { return n.prefix + ".1" }

// addHost creates a network namespace wired to the bridge, with the next address.
func (n *testNet) addHost() *netHost {
	t := n.t
	t.Helper()
	n.hosts++
	h := &netHost{net: n, ns: fmt.Sprintf("skj%s-%d", n.id, n.hosts), IP: fmt.Sprintf("%s.%d", n.prefix, n.hosts+1), veth: fmt.Sprintf("skjv%s%d", n.id, n.hosts)}
	run(t, "ip", "netns", "add", h.ns)
	t.Cleanup(func() {
		// Whatever still runs in the namespace was started by this test (its node and containers).
		if out, err := exec.Command("ip", "netns", "pids", h.ns).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					if p, err := os.FindProcess(pid); err == nil {
						_ = p.Kill()
					}
				}
			}
		}
		_ = exec.Command("ip", "link", "del", h.veth).Run()
		_ = exec.Command("ip", "netns", "del", h.ns).Run()
	})
	run(t, "ip", "link", "add", h.veth, "type", "veth", "peer", "name", h.veth+"p")
	run(t, "ip", "link", "set", h.veth, "master", n.bridge, "up")
	// A host's NodePort DNATed to a pod on the sending node is bridged back out of its ingress
	// port when br_netfilter is on (see hack/conformance.sh): hairpin mode lets it through.
	run(t, "bridge", "link", "set", "dev", h.veth, "hairpin", "on")
	run(t, "ip", "link", "set", h.veth+"p", "netns", h.ns)
	in := func(args ...string) { run(t, "ip", append([]string{"-n", h.ns}, args...)...) }
	in("link", "set", h.veth+"p", "name", "eth0")
	in("addr", "add", h.IP+"/24", "dev", "eth0")
	in("link", "set", "eth0", "up")
	in("link", "set", "lo", "up")
	return h
}

// Command runs a program inside the host's network namespace only (mounts and cgroups stay the
// machine's).
func (h *netHost) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + h.ns, name}, args...)...)
}

// newJoinCluster starts a control plane (etcd,controlplane) named cp-1 bound to the test net's
// host address. With kubelet it runs its own kubelet and registers a tainted Node by default (no
// --control-plane-kubelet: these tests run as root with containerd, so the default is what they
// prove); its data dir is short then (containerd's socket path limit). Without, it gets
// --control-plane-kubelet=false.
func newJoinCluster(t *testing.T, n *testNet, kubelet bool, extraArgs ...string) *cluster {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"--bind-address", n.HostIP(), "--advertise-address", n.HostIP(), "--node-name", "cp-1"}, extraArgs...)
	if kubelet {
		dir = filepath.Join(os.TempDir(), "skjc"+randomID(t))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	c := &cluster{t: t, bin: skiffBinary, dataDir: dir, extraArgs: args, kubelet: kubelet}
	c.ports = [3]int{freePort(t), freePort(t), freePort(t)}
	c.kubeconfig = filepath.Join(c.dataDir, "admin.kubeconfig")
	c.start()
	t.Cleanup(c.stop)
	return c
}

// ServerURL is the control plane's API server as other hosts reach it.
func (c *cluster) ServerURL(n *testNet) string {
	return "https://" + n.HostIP() + ":" + strconv.Itoa(c.ports[0])
}

// createToken runs skiff token create on the control plane.
func (c *cluster) createToken(args ...string) string {
	c.t.Helper()
	out, err := execOutput(c.bin, append([]string{"token", "create", "--data-dir", c.dataDir}, args...)...)
	if err != nil {
		c.t.Fatalf("skiff token create: %v\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// joinedNode is a `skiff server --server ... --roles worker` process in a netHost.
type joinedNode struct {
	t       *testing.T
	host    *netHost
	name    string
	dataDir string
	server  string
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	// roles is --roles ("" for worker); extraArgs are more `skiff server` flags.
	roles     string
	extraArgs []string
	// kubelet leaves --control-plane-kubelet at its default for a node without the worker role
	// (the kubelet runs where the node can) instead of turning it off (kubeletOffArgs).
	kubelet bool
	// wrap, when set, is the command skiff runs under inside the netHost (skiffBinary and its
	// arguments follow it), e.g. one that gives the node a mount namespace of its own.
	wrap []string
	// bin is the skiff binary the node runs ("": skiffBinary, the one built from this tree).
	bin string
}

// binary is the skiff binary the node runs.
func (w *joinedNode) binary() string {
	if w.bin != "" {
		return w.bin
	}
	return skiffBinary
}

// newJoinedNode prepares a worker in h with a short data dir (containerd's socket path limit).
func newJoinedNode(t *testing.T, h *netHost, name, server string) *joinedNode {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "skj"+randomID(t))
	t.Cleanup(func() {
		// A node the test killed (or one stopped with pods running, as a kubelet leaves them) keeps
		// its containers' rootfs and shm mounts under the data dir; RemoveAll alone left them
		// and the dir behind.
		containerdtest.UnmountUnder(t, dir)
		os.RemoveAll(dir)
		os.Remove(dir + ".log")
	})
	return &joinedNode{t: t, host: h, name: name, dataDir: dir, server: server}
}

func (w *joinedNode) args(token string) []string {
	roles := "worker"
	if w.roles != "" {
		roles = w.roles
	}
	args := []string{"server", "--server", w.server, "--roles", roles, "--node-name", w.name,
		"--bind-address", w.host.IP, "--advertise-address", w.host.IP, "--data-dir", w.dataDir}
	args = append(args, diskReserveArgs(w.binary())...)
	if !w.kubelet {
		args = append(args, kubeletOffArgs(w.binary(), roles)...)
	}
	args = append(args, w.extraArgs...)
	if token != "" {
		args = append(args, "--token", token)
	}
	return args
}

// readyWithBusybox waits until the joined node is Ready, then imports the test busybox image
// (built into c's data dir) into its containerd.
func (w *joinedNode) readyWithBusybox(c *cluster) {
	w.t.Helper()
	eventually(w.t, 120*time.Second, func() error {
		if out, err := c.kubectlErr("wait", "--for=condition=Ready", "node/"+w.name, "--timeout=2s"); err != nil {
			return errString(out + "\n" + w.name + ":\n" + w.log())
		}
		return nil
	})
	archive, err := execOutput(skiffBinary, "images", "build-busybox", "--out", c.dataDir)
	if err != nil {
		w.t.Fatalf("build image: %v\n%s", err, archive)
	}
	if out, err := execOutput(skiffBinary, "images", "import", "--data-dir", w.dataDir, strings.TrimSpace(archive)); err != nil {
		w.t.Fatalf("import image on %s: %v\n%s", w.name, err, out)
	}
}

// start runs the node in the background (token "" for a restart).
func (w *joinedNode) start(token string) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(w.logPath()), 0o700); err != nil {
		w.t.Fatal(err)
	}
	f, err := os.OpenFile(w.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		w.t.Fatal(err)
	}
	w.logFile = f
	if len(w.wrap) > 0 {
		w.cmd = w.host.Command(w.wrap[0], append(append(w.wrap[1:len(w.wrap):len(w.wrap)], w.binary()), w.args(token)...)...)
	} else {
		w.cmd = w.host.Command(w.binary(), w.args(token)...)
	}
	w.cmd.Stdout, w.cmd.Stderr = f, f
	if err := w.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.done = make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(w.done) }()
}

// logPath sits beside the data dir, so a refused join's log survives the data dir's removal.
func (w *joinedNode) logPath() string { return w.dataDir + ".log" }

func (w *joinedNode) log() string {
	data, _ := os.ReadFile(w.logPath())
	if len(data) > 8000 {
		data = data[len(data)-8000:]
	}
	return string(data)
}

// stop interrupts the node and waits for it.
func (w *joinedNode) stop() {
	if w.cmd == nil || w.cmd.Process == nil {
		return
	}
	_ = w.cmd.Process.Signal(os.Interrupt)
	select {
	case <-w.done:
	case <-time.After(20 * time.Second):
		_ = w.cmd.Process.Kill()
		<-w.done
	}
	w.logFile.Close()
	w.cmd = nil
}

// joinRefused runs a join in the foreground that must fail, returning its output.
func (w *joinedNode) joinRefused(token string) string {
	w.t.Helper()
	cmd := w.host.Command(w.binary(), w.args(token)...)
	timer := time.AfterFunc(90*time.Second, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	out, err := cmd.CombinedOutput()
	timer.Stop()
	if err == nil {
		w.t.Fatalf("join of %s with a bad token succeeded:\n%s", w.name, out)
	}
	return string(out)
}
