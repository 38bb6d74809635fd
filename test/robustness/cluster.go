package robustness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skiff-sh/skiff/internal/nodeadmin"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// Ports hands out TCP ports free on every address, each once, below the kernel's ephemeral range
// and the node-port range (a port the kernel picked could be taken by an outgoing connection
// before the node binds it).
type Ports struct {
	mu   sync.Mutex
	rng  *rand.Rand
	used map[int]bool
}

// NewPorts seeds the allocator.
func NewPorts(seed uint64) *Ports {
	return &Ports{rng: rand.New(rand.NewPCG(seed, 24)), used: map[int]bool{}}
}

// Next is a free port.
func (p *Ports) Next() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 1000 {
		port := 20000 + p.rng.IntN(10000)
		if p.used[port] {
			continue
		}
		p.used[port] = true
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, errors.New("no free port between 20000 and 29999")
}

// Node is one `skiff server` process with the etcd and controlplane roles.
type Node struct {
	Bin, DataDir, Name string
	// Addr is the loopback address the node binds (127.0.0.x).
	Addr                                     string
	HTTPSPort, EtcdClient, EtcdPeer, Kubelet int
	LB                                       int
	// Join are the flags of a joining member (--server, --token); dropped after the first start,
	// as a restarted member has its keys and its etcd data. A control plane on an external etcd
	// keeps --server (it has no member to find the cluster by), as the e2e tests restart one.
	Join []string
	// EtcdServers, when set, makes the node a control plane on that external etcd.
	EtcdServers string
	// Cgroup is the cgroup (v2) directory the process starts in ("": the test's own), which
	// partitions tell the nodes apart by.
	Cgroup string
	// Once are flags for the next start only (a cluster reset's --restore-from).
	Once []string
	// Netns, when set, is the network namespace the node runs in, Addr its address there (a
	// scenario with workers: every node in one of its own).
	Netns *Host
	// Worker makes the node a worker (--roles worker) with no API server of its own; Admin is
	// then the admin kubeconfig of a control plane, whose credentials reach the API through the
	// worker's balancer.
	Worker bool
	Admin  string
	proc   process
}

// NewNode prepares a node in dataDir on addr, with ports from p (a joining node shares the
// first's port numbers on its own address, as the e2e HA tests do).
func NewNode(bin, dataDir, name, addr string, p *Ports, like *Node) (*Node, error) {
	n := &Node{Bin: bin, DataDir: dataDir, Name: name, Addr: addr}
	if like != nil {
		n.HTTPSPort, n.EtcdClient, n.EtcdPeer, n.Kubelet, n.LB = like.HTTPSPort, like.EtcdClient, like.EtcdPeer, like.Kubelet, like.LB
		return n, os.MkdirAll(dataDir, 0o700)
	}
	for _, port := range []*int{&n.HTTPSPort, &n.EtcdClient, &n.EtcdPeer, &n.Kubelet, &n.LB} {
		v, err := p.Next()
		if err != nil {
			return nil, err
		}
		*port = v
	}
	return n, os.MkdirAll(dataDir, 0o700)
}

func (n *Node) args() []string {
	if n.Worker {
		args := []string{"server", "--data-dir", n.DataDir, "--roles", "worker",
			"--bind-address", n.Addr, "--advertise-address", n.Addr, "--node-name", n.Name,
			"--kubelet-port", strconv.Itoa(n.Kubelet), "--lb-port", strconv.Itoa(n.LB)}
		return append(append(args, n.Join...), n.Once...)
	}
	roles := "etcd,controlplane"
	var external []string
	if n.EtcdServers != "" {
		roles, external = "controlplane", []string{"--etcd-servers", n.EtcdServers}
	}
	if n.Netns != nil {
		external = append(external, "--advertise-address", n.Addr)
	}
	args := []string{"server", "--data-dir", n.DataDir, "--roles", roles,
		"--bind-address", n.Addr, "--node-name", n.Name,
		"--https-port", strconv.Itoa(n.HTTPSPort), "--etcd-client-port", strconv.Itoa(n.EtcdClient),
		"--etcd-peer-port", strconv.Itoa(n.EtcdPeer), "--kubelet-port", strconv.Itoa(n.Kubelet),
		"--lb-port", strconv.Itoa(n.LB), "--etcd-disk-reserve-bytes", strconv.Itoa(DiskReserve),
		// Control planes only, side by side in the host's network namespace: no kubelet, which
		// the node would otherwise run by default as root with containerd.
		"--control-plane-kubelet=false"}
	return append(append(append(args, external...), n.Join...), n.Once...)
}

// DiskReserve is the free space the nodes keep for etcd. A test machine's disk is shared with
// other tenants and has been seen with 1 GiB free and less, where the automatic threshold (1 GiB
// on a large disk) would refuse every write and read as a finding.
const DiskReserve = 128 << 20

// Start starts the process (its output appended to skiff.log in the data dir); the goroutine
// that waits for it is joined by Kill and Stop.
func (n *Node) Start() error {
	// Not bound to a context: the node runs until Kill or Stop.
	cmd := n.command(context.Background(), n.Bin, n.args()...)
	if n.Cgroup != "" {
		// Started inside its cgroup (clone3 CLONE_INTO_CGROUP), so every socket it ever opens
		// belongs to it.
		dir, err := os.Open(n.Cgroup)
		if err != nil {
			return fmt.Errorf("node %s cgroup: %w", n.Name, err)
		}
		defer dir.Close()
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	}
	n.proc.name = "node " + n.Name
	n.Once = nil
	return n.proc.start(cmd, filepath.Join(n.DataDir, "skiff.log"))
}

// command runs a program where the node runs: in its network namespace, if it has one.
func (n *Node) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if n.Netns != nil {
		return n.Netns.Command(ctx, name, args...)
	}
	return exec.CommandContext(ctx, name, args...)
}

// Running says whether the process is up.
func (n *Node) Running() bool { return n.proc.running() }

// Kill sends SIGKILL, as a crash would, and waits for the process.
func (n *Node) Kill() {
	if !n.Running() {
		return
	}
	n.proc.kill()
	n.Join = restartFlags(n.Join, n.EtcdServers != "")
}

// restartFlags are the join flags a restarted node keeps: none for a member of the cluster's
// etcd; --server (not the used token) for a control plane on an external etcd.
func restartFlags(join []string, external bool) []string {
	if !external {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(join); i += 2 {
		if join[i] == "--server" {
			out = append(out, join[i], join[i+1])
		}
	}
	return out
}

// Stop interrupts the process, killing it after ten seconds.
func (n *Node) Stop() { n.proc.stop() }

// Pause sends SIGSTOP; Resume SIGCONT.
func (n *Node) Pause() error  { return n.proc.signal(syscall.SIGSTOP) }
func (n *Node) Resume() error { return n.proc.signal(syscall.SIGCONT) }

// Log is the tail of the node's log.
func (n *Node) Log(limit int) string {
	data, _ := os.ReadFile(filepath.Join(n.DataDir, "skiff.log"))
	if len(data) > limit {
		data = data[len(data)-limit:]
	}
	return string(data)
}

// RESTConfig is the admin's config aimed at the node's API server, or at its load balancer.
func (n *Node) RESTConfig(viaLB bool) (*rest.Config, error) {
	admin := n.Admin
	if admin == "" {
		admin = filepath.Join(n.DataDir, "admin.kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		return nil, fmt.Errorf("node %s kubeconfig: %w", n.Name, err)
	}
	port := n.HTTPSPort
	if viaLB {
		port = n.LB
	}
	cfg.Host = "https://" + net.JoinHostPort(n.Addr, strconv.Itoa(port))
	if viaLB && n.Netns != nil {
		// The balancer listens on the namespace's loopback; every API server's certificate
		// names "kubernetes", as the node's own clients verify.
		cfg.Host = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cfg.Dial = n.Netns.DialContext
		cfg.TLSClientConfig.ServerName = "kubernetes"
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return cfg, nil
}

// WaitReady polls /readyz until it answers ok or ctx ends.
func (n *Node) WaitReady(ctx context.Context, clk clock.WithTicker) error {
	tick := clk.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = n.ready(ctx); last == nil {
			return nil
		}
		if !n.Running() {
			return fmt.Errorf("node %s exited: %s", n.Name, n.Log(4000))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not ready: %w (last: %v)", n.Name, ctx.Err(), last)
		case <-tick.C():
		}
	}
}

// ready checks /readyz on the API server and through the balancer: on a fresh node, calls through
// the balancer were refused for about half a second after the server answered ready (not yet
// explained), and a client's first calls should not all fail for that.
func (n *Node) ready(ctx context.Context) error {
	ways := []bool{false, true}
	if n.Worker {
		ways = []bool{true} // no API server of its own
	}
	for _, viaLB := range ways {
		if err := n.readyz(ctx, viaLB); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) readyz(ctx context.Context, viaLB bool) error {
	cfg, err := n.RESTConfig(viaLB)
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz %d", resp.StatusCode)
	}
	return nil
}

// Etcd is a client of the node's etcd member with the API server's client certificate (the
// files `skiff etcd snapshot save` reads: CA, certificate and key on three lines of
// etcd-client-tls).
func (n *Node) Etcd() (*clientv3.Client, error) {
	data, err := os.ReadFile(filepath.Join(n.DataDir, "etcd-client-tls"))
	if err != nil {
		return nil, fmt.Errorf("node %s etcd client files: %w", n.Name, err)
	}
	files := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(files) != 3 {
		return nil, fmt.Errorf("node %s etcd-client-tls: want 3 lines, got %q", n.Name, data)
	}
	caPEM, err := os.ReadFile(files[0])
	if err != nil {
		return nil, fmt.Errorf("etcd CA: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(files[1], files[2])
	if err != nil {
		return nil, fmt.Errorf("etcd client certificate: %w", err)
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://" + net.JoinHostPort(n.Addr, strconv.Itoa(n.EtcdClient))},
		DialTimeout: 5 * time.Second,
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		// Its own log lines (a snapshot's download) would only crowd the test's.
		Logger: zap.NewNop(),
	})
}

// Status is `skiff status -o json` on n: the etcd members and their leader, the Lease holders.
func (n *Node) Status(ctx context.Context) (nodeadmin.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var r nodeadmin.Report
	out, err := n.command(ctx, n.Bin, "status", "-o", "json", "--data-dir", n.DataDir).Output()
	if err != nil {
		return r, fmt.Errorf("skiff status on %s: %w", n.Name, err)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("decode skiff status on %s: %w", n.Name, err)
	}
	return r, nil
}

// EtcdLeader is the name of the member leading etcd.
func EtcdLeader(r nodeadmin.Report) string {
	if r.Etcd == nil || !r.Etcd.Quorum {
		return ""
	}
	for _, m := range r.Etcd.Members {
		if m.IsLeader {
			return m.Name
		}
	}
	return ""
}

// LeaseHolder is the node holding a component's Lease while it renews it ("" when none does).
// Holders are identities "<node>_<pid>", as skiff's control plane writes them.
func LeaseHolder(r nodeadmin.Report, component string) string {
	for _, l := range r.Leaders {
		if l.Component == component && l.Fresh {
			return l.Holder
		}
	}
	return ""
}

// admin is a client of the first running control plane's API server.
func (c *Cluster) admin() (*kubernetes.Clientset, error) {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cfg, err := n.RESTConfig(false)
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(cfg)
	}
	return nil, errors.New("no control plane running")
}

// WaitWorkersReady waits for every worker's Node to be Ready.
func (c *Cluster) WaitWorkersReady(ctx context.Context) error {
	cs, err := c.admin()
	if err != nil {
		return err
	}
	for _, w := range c.Workers {
		for {
			node, err := cs.CoreV1().Nodes().Get(ctx, w.Name, metav1.GetOptions{})
			if err == nil && nodeReady(node) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %s not ready (%v): %w\n%s", w.Name, err, ctx.Err(), w.Log(3000))
			case <-c.Clock.After(500 * time.Millisecond):
			}
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DrainWorkers deletes the runs' namespaces and waits until the workers' kubelets have removed
// their pods, so that no container outlives the test when the workers stop.
func (c *Cluster) DrainWorkers(ctx context.Context) error {
	cs, err := c.admin()
	if err != nil {
		return err
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "robustness-") {
			if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete namespace %s: %w", ns.Name, err)
			}
		}
	}
	for {
		left := 0
		for _, w := range c.Workers {
			pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + w.Name})
			if err != nil {
				return fmt.Errorf("list pods on %s: %w", w.Name, err)
			}
			left += len(pods.Items)
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d pods still on the workers: %w", left, ctx.Err())
		case <-c.Clock.After(time.Second):
		}
	}
}
