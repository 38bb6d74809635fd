// Command startbench measures how long a skiff node takes to start: from the exec of
// `skiff server` to its admin kubeconfig, to a healthy API server (/readyz ok), to its Node
// registered and to the Node Ready, median, best and worst of N runs, for
//
//   - a fresh single node with every role (etcd, controlplane, worker: skiff supervises its own
//     containerd) on a new data dir,
//   - the same node restarted on the data dir it left (certificates, etcd data and containerd's
//     image store already there),
//   - optionally a worker joining a running control plane (`--roles worker --server --token`), as
//     a second node on another loopback address (127.0.0.2) of this host, each run on a new data
//     dir: the time from its exec to its Node Ready as the control plane reports it.
//
// Every node runs on free loopback ports with its own bridge and pod network; its service rules,
// bridge and data dir are removed after its runs.
//
//	go build -o bin/skiff ./cmd/skiff && go run ./test/bench/cmd/startbench --skiff bin/skiff
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/proxy"
	"github.com/skiff-sh/skiff/test/bench"
)

func main() {
	if err := run1(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "startbench:", err)
		}
		os.Exit(1)
	}
}

type options struct {
	binary   string
	runs     int
	single   bool
	restarts bool
	worker   bool
	tmpDir   string
	timeout  time.Duration
	poll     time.Duration
	keepLogs bool
	label    string
	// extra are arguments added to every node's command line (e.g. --log-level debug, whose
	// "start phase done" lines say where a start's time went).
	extra []string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("startbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.binary, "skiff", "", "skiff binary (default: go build ./cmd/skiff into a temporary directory)")
	fs.IntVar(&o.runs, "runs", 5, "starts of each kind")
	fs.BoolVar(&o.single, "single", true, "start a single node with every role, --runs times")
	fs.BoolVar(&o.restarts, "restart", true, "also restart each fresh node once on the data dir it left")
	fs.BoolVar(&o.worker, "worker", true, "also join a worker (on 127.0.0.2) to a control plane, --runs times")
	fs.StringVar(&o.tmpDir, "tmp-dir", "/tmp", "where the nodes' data dirs go (short: containerd's socket path has a length limit)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long one start may take to reach Node Ready")
	fs.DurationVar(&o.poll, "poll", 10*time.Millisecond, "how often the phases are checked (the figures' resolution)")
	fs.BoolVar(&o.keepLogs, "keep-logs", false, "keep every node's log (<data dir>.log) even when the runs succeed")
	fs.StringVar(&o.label, "label", "", "a note printed with the figures")
	extra := fs.String("skiff-args", "", "space-separated arguments added to every node's command line (e.g. \"--log-level debug\")")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.extra = strings.Fields(*extra)
	if o.runs < 1 {
		return o, fmt.Errorf("--runs: %d is not positive", o.runs)
	}
	if o.poll <= 0 {
		return o, fmt.Errorf("--poll: %s is not positive", o.poll)
	}
	return o, nil
}

func run1(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("the worker role (containerd, the pod network) needs root")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	binary, cleanupBinary, err := bench.EnsureBinary(ctx, o.binary, stderr)
	if err != nil {
		return err
	}
	defer cleanupBinary()
	if o.binary, err = filepath.Abs(binary); err != nil {
		return err
	}
	began := time.Now()
	fresh, restarted := scenario{name: "single node, every role, fresh data dir"}, scenario{name: "single node, every role, restart on its data dir"}
	for i := range o.runs * boolInt(o.single) {
		f, r, err := singleNode(ctx, o, i, stderr)
		if err != nil {
			return err
		}
		fresh.runs = append(fresh.runs, f)
		if r != nil {
			restarted.runs = append(restarted.runs, r)
		}
	}
	var scenarios []scenario
	if o.single {
		scenarios = append(scenarios, fresh)
	}
	if o.single && o.restarts {
		scenarios = append(scenarios, restarted)
	}
	if o.worker {
		joins, err := workerJoins(ctx, o, stderr)
		if err != nil {
			return err
		}
		scenarios = append(scenarios, scenario{name: "worker joining a running control plane (second node on 127.0.0.2, fresh data dir)", runs: joins})
	}
	header := []string{"machine: " + bench.DescribeMachine().String(), "date: " + began.UTC().Format(time.RFC3339)}
	if o.label != "" {
		header = append(header, "label: "+o.label)
	}
	writeReport(stdout, header, scenarios)
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// node is one skiff server process of the benchmark, with what must be removed after it.
type node struct {
	name, dataDir, bridge string
	args                  []string
	cmd                   *exec.Cmd
	exited                chan error
	logFile               *os.File
	// readySince is the heartbeat of the Ready condition the node's last start posted: a restart
	// is Ready once its kubelet posts a later one, not when the API server first shows the
	// condition the previous start left.
	readySince metav1.Time
}

// newNode makes a data dir and the command line of a node; args are its role-specific arguments.
func newNode(o options, name string, args []string) (*node, error) {
	dir, err := os.MkdirTemp(o.tmpDir, "sksb")
	if err != nil {
		return nil, err
	}
	n := &node{name: name, dataDir: dir, bridge: fmt.Sprintf("sksb%06x", rand.IntN(1<<24))}
	n.args = append([]string{"server", "--data-dir", dir, "--node-name", name, "--cni-bridge", n.bridge,
		"--cluster-cidr", fmt.Sprintf("10.%d.0.0/16", 200+rand.IntN(40))}, args...)
	n.args = append(n.args, o.extra...)
	return n, nil
}

// start execs the node's skiff server, its output appended to <data dir>.log, and returns when
// it was started.
func (n *node) start(binary string) (time.Time, error) {
	f, err := os.OpenFile(n.dataDir+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return time.Time{}, err
	}
	n.logFile = f
	n.cmd = exec.Command(binary, n.args...)
	n.cmd.Stdout, n.cmd.Stderr = f, f
	began := time.Now()
	if err := n.cmd.Start(); err != nil {
		f.Close()
		return time.Time{}, fmt.Errorf("start %s: %w", n.name, err)
	}
	n.exited = make(chan error, 1)
	go func() { n.exited <- n.cmd.Wait() }()
	return began, nil
}

// stop ends the node's process (SIGTERM, SIGKILL after 30 s) and waits for it.
func (n *node) stop() {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
	n.cmd = nil
	n.logFile.Close()
}

// remove takes away what the node left on the host: its service rules, its bridge, its pod
// network's address leases and its data dir (its log too, unless keep).
func (n *node) remove(keep bool, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := proxy.NodePrefix(n.dataDir)
	host := proxy.Host{}
	if err := host.CleanupAll(ctx, prefix); err != nil {
		fmt.Fprintf(stderr, "%s: remove service rules: %v\n", n.name, err)
	}
	if err := host.DeleteDevice(ctx, proxy.DeviceName(prefix)); err != nil {
		fmt.Fprintf(stderr, "%s: remove service range device: %v\n", n.name, err)
	}
	_ = exec.CommandContext(ctx, "ip", "link", "del", n.bridge).Run()
	os.RemoveAll(filepath.Join("/var/lib/cni/skiff", n.bridge))
	os.RemoveAll(n.dataDir)
	if !keep {
		os.Remove(n.dataDir + ".log")
	}
}

func singleNodeArgs(ports []int) []string {
	return []string{"--roles", "etcd,controlplane,worker", "--bind-address", "127.0.0.1",
		"--https-port", strconv.Itoa(ports[0]), "--etcd-client-port", strconv.Itoa(ports[1]),
		"--etcd-peer-port", strconv.Itoa(ports[2]), "--kubelet-port", strconv.Itoa(ports[3]), "--lb-port", strconv.Itoa(ports[4])}
}

// singleNode starts a fresh node with every role, and with o.restarts starts it again on its data
// dir (the same ports), each time until its Node is Ready.
func singleNode(ctx context.Context, o options, i int, stderr io.Writer) (fresh, restarted run, err error) {
	ports, err := bench.FreePorts(5)
	if err != nil {
		return nil, nil, err
	}
	n, err := newNode(o, fmt.Sprintf("startbench-%d", i), singleNodeArgs(ports))
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		n.remove(o.keepLogs || !ok, stderr)
		if !ok {
			fmt.Fprintln(stderr, "the node's log:", n.dataDir+".log")
		}
	}()
	kubeconfig := filepath.Join(n.dataDir, "admin.kubeconfig")
	fmt.Fprintf(stderr, "run %d: fresh node in %s ...\n", i+1, n.dataDir)
	if fresh, err = startAndMeasure(ctx, o, n, kubeconfig, true); err != nil {
		return nil, nil, err
	}
	if o.restarts {
		fmt.Fprintf(stderr, "run %d: restart ...\n", i+1)
		if restarted, err = startAndMeasure(ctx, o, n, kubeconfig, true); err != nil {
			return nil, nil, err
		}
	}
	ok = true
	return fresh, restarted, nil
}

// startAndMeasure starts n, measures its phases and stops it. withAPI says the node serves the
// API itself (its admin kubeconfig and /readyz are phases); otherwise kubeconfig is another
// node's, through which its Node is watched.
func startAndMeasure(ctx context.Context, o options, n *node, kubeconfig string, withAPI bool) (run, error) {
	began, err := n.start(o.binary)
	if err != nil {
		return nil, err
	}
	defer n.stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	r, err := measure(ctx, o.poll, n, kubeconfig, withAPI, began)
	if err != nil {
		return r, fmt.Errorf("%s: %w (reached %v)", n.name, err, r)
	}
	return r, nil
}

// measure checks every poll which phase the node has reached, until its Node is Ready.
func measure(ctx context.Context, poll time.Duration, n *node, kubeconfig string, withAPI bool, began time.Time) (run, error) {
	r := run{}
	var client *kubernetes.Clientset
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		if client == nil {
			if _, err := os.Stat(kubeconfig); err == nil {
				if withAPI {
					r[phaseKubeconfig] = time.Since(began)
				}
				cfg, err := bench.AdminConfig(kubeconfig)
				if err != nil {
					return r, err
				}
				cfg.Timeout = 2 * time.Second
				if client, err = kubernetes.NewForConfig(cfg); err != nil {
					return r, err
				}
			}
		}
		if client != nil {
			if done := check(ctx, client, n, withAPI, r, began); done {
				return r, nil
			}
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case err := <-n.exited:
			n.exited <- err // stop waits on it too
			return r, fmt.Errorf("skiff server exited: %v", err)
		case <-ticker.C:
		}
	}
}

// check records the phases the node reached by now and says whether its Node is Ready.
func check(ctx context.Context, client *kubernetes.Clientset, n *node, withAPI bool, r run, began time.Time) bool {
	if _, seen := r[phaseHealthy]; withAPI && !seen {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil || strings.TrimSpace(string(body)) != "ok" {
			return false
		}
		r[phaseHealthy] = time.Since(began)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	at := time.Since(began)
	if _, seen := r[phaseRegistered]; !seen {
		r[phaseRegistered] = at
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && c.LastHeartbeatTime.After(n.readySince.Time) {
			r[phaseReady] = at
			n.readySince = c.LastHeartbeatTime
			return true
		}
	}
	return false
}

// workerJoins starts a control plane (etcd, controlplane) on 127.0.0.1 and joins o.runs workers
// to it one after another, each on 127.0.0.2 with a new data dir, measured from exec to its Node
// Ready as the control plane reports it; each worker is stopped and its Node deleted before the
// next.
func workerJoins(ctx context.Context, o options, stderr io.Writer) ([]run, error) {
	ports, err := bench.FreePorts(5)
	if err != nil {
		return nil, err
	}
	cp, err := newNode(o, "startbench-cp", append([]string{"--roles", "etcd,controlplane", "--bind-address", "127.0.0.1",
		"--https-port", strconv.Itoa(ports[0]), "--etcd-client-port", strconv.Itoa(ports[1]),
		"--etcd-peer-port", strconv.Itoa(ports[2]), "--lb-port", strconv.Itoa(ports[3])}, bench.KubeletOffArgs(o.binary)...))
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() { cp.remove(o.keepLogs || !ok, stderr) }()
	fmt.Fprintf(stderr, "control plane for the joins in %s ...\n", cp.dataDir)
	if _, err := cp.start(o.binary); err != nil {
		return nil, err
	}
	defer cp.stop()
	kubeconfig := filepath.Join(cp.dataDir, "admin.kubeconfig")
	srvCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := waitHealthy(srvCtx, o.poll, cp, kubeconfig); err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	token, err := exec.CommandContext(ctx, o.binary, "token", "create", "--data-dir", cp.dataDir).Output()
	if err != nil {
		return nil, fmt.Errorf("skiff token create: %w", err)
	}
	var runs []run
	for i := range o.runs {
		wports, err := bench.FreePorts(2)
		if err != nil {
			return nil, err
		}
		w, err := newNode(o, fmt.Sprintf("startbench-worker-%d", i), []string{"--roles", "worker",
			"--server", "https://127.0.0.1:" + strconv.Itoa(ports[0]), "--token", strings.TrimSpace(string(token)),
			"--bind-address", "127.0.0.2", "--advertise-address", "127.0.0.2",
			"--kubelet-port", strconv.Itoa(wports[0]), "--lb-port", strconv.Itoa(wports[1])})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "join %d: worker in %s ...\n", i+1, w.dataDir)
		r, err := startAndMeasure(ctx, o, w, kubeconfig, false)
		w.remove(o.keepLogs || err != nil, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "the worker's log:", w.dataDir+".log")
			return nil, err
		}
		runs = append(runs, r)
		if err := deleteNode(ctx, kubeconfig, w.name); err != nil {
			return nil, err
		}
	}
	ok = true
	return runs, nil
}

// waitHealthy waits until the API server of n answers /readyz with ok through kubeconfig.
func waitHealthy(ctx context.Context, poll time.Duration, n *node, kubeconfig string) error {
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		if cfg, err := bench.AdminConfig(kubeconfig); err == nil {
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			if err == nil && strings.TrimSpace(string(body)) == "ok" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-n.exited:
			n.exited <- err // stop waits on it too
			return fmt.Errorf("skiff server exited: %v", err)
		case <-ticker.C:
		}
	}
}

func deleteNode(ctx context.Context, kubeconfig, name string) error {
	cfg, err := bench.AdminConfig(kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	return nil
}
