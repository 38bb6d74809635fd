// Command podbench measures pod startup on one real node: it starts `skiff server` with every role
// (etcd, controlplane, worker, so skiff supervises its own containerd) in a temporary data dir,
// imports the offline busybox image, and then
//
//   - creates N pods at once and reports create-to-Running latency as seen by a watch (p50, p99),
//   - samples the node's CPU and RSS (skiff + its containerd + the shims, from /proc) while the N
//     pods run,
//   - optionally creates pods one after another and reports the same latency for each in isolation.
//
// Every pod is deleted and skiff stopped before it exits.
//
//	go build -o bin/skiff ./cmd/skiff && go run ./test/bench/cmd/podbench --skiff bin/skiff
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/test/bench"
)

const (
	namespace = "podbench"
	image     = "localhost/busybox:local"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "podbench:", err)
		}
		os.Exit(1)
	}
}

type options struct {
	binary      string
	pods        int
	concurrency int
	sequential  int
	sampleFor   time.Duration
	timeout     time.Duration
	serverLog   string
	label       string
	traced      int
	tmpDir      string
	ociRuntime  string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("podbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.binary, "skiff", "", "skiff binary (default: go build ./cmd/skiff into a temporary directory)")
	fs.IntVar(&o.pods, "pods", 100, "pods created at once")
	fs.IntVar(&o.concurrency, "concurrency", 0, "parallel create calls for the burst (default: one per pod, all at once)")
	fs.IntVar(&o.sequential, "sequential", 30, "pods created one after another, each after the previous one runs (0 skips)")
	fs.DurationVar(&o.sampleFor, "sample", 10*time.Second, "how long to sample CPU with the pods running")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long all pods may take to run")
	fs.StringVar(&o.serverLog, "server-log", "", "file for skiff's log (default: the data dir's name + .log in /tmp)")
	fs.StringVar(&o.label, "label", "", "a note printed with the figures")
	fs.StringVar(&o.tmpDir, "tmp-dir", "/tmp", "where the node's data dir goes (etcd refuses writes when its file system has less than a twentieth free: a tmpfs helps on a full disk)")
	fs.StringVar(&o.ociRuntime, "oci-runtime", "", "the node's OCI runtime, skiff server's --oci-runtime (runc or crun; default: the server's)")
	fs.IntVar(&o.traced, "trace-execs", 0, "pods created one after another at the end with strace following containerd: counts the programs each pod runs")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.pods < 1 {
		return o, fmt.Errorf("--pods: %d is not positive", o.pods)
	}
	if o.concurrency <= 0 || o.concurrency > o.pods {
		o.concurrency = o.pods
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	binary, cleanupBinary, err := bench.EnsureBinary(ctx, o.binary, stderr)
	if err != nil {
		return err
	}
	defer cleanupBinary()
	o.binary = binary
	if o.binary, err = filepath.Abs(o.binary); err != nil {
		return err
	}
	// A short data dir keeps containerd's socket path under the unix-socket limit.
	dataDir, err := os.MkdirTemp(o.tmpDir, "skpb")
	if err != nil {
		return err
	}
	logPath := o.serverLog
	if logPath == "" {
		logPath = dataDir + ".log"
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	succeeded := false
	defer func() {
		if succeeded && o.serverLog == "" {
			os.Remove(logPath)
		} else if !succeeded {
			fmt.Fprintln(stderr, "skiff's log:", logPath)
		}
	}()
	// Fixed ports (the last of a repeated flag wins), so that skiff can be started again on the
	// same data dir if it dies, to remove the pods it left.
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	opts := bench.ServerOptions{Binary: o.binary, DataDir: dataDir, Log: logFile, ExtraArgs: []string{
		"--roles", "etcd,controlplane,worker", "--https-port", strconv.Itoa(ports[0]),
		"--etcd-client-port", strconv.Itoa(ports[1]), "--etcd-peer-port", strconv.Itoa(ports[2]),
	}}
	if o.ociRuntime != "" {
		opts.ExtraArgs = append(opts.ExtraArgs, "--oci-runtime", o.ociRuntime)
	}

	fmt.Fprintln(stderr, "starting", o.binary, "with every role; its log:", logPath)
	srv, err := bench.StartServer(ctx, opts)
	if err != nil {
		os.RemoveAll(dataDir)
		return err
	}
	// Pods go before skiff stops, so no container outlives the benchmark.
	defer func() { cleanUp(context.WithoutCancel(ctx), srv, opts, stderr) }()
	cfg, err := srv.RESTConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	if err := waitNodeReady(ctx, client, 2*time.Minute); err != nil {
		return err
	}
	if err := importBusybox(ctx, o.binary, dataDir); err != nil {
		return err
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	if err := waitServiceAccount(ctx, client); err != nil {
		return err
	}

	report := report{machine: bench.DescribeMachine(), label: o.label, pods: o.pods, concurrency: o.concurrency}
	report.loadBefore = loadAverage()

	// One warm-up pod, so the first measured pod pays no one-time costs (CNI setup, caches).
	fmt.Fprintln(stderr, "warm-up pod ...")
	if _, err := startPods(ctx, client, "warmup", 1, 1, o.timeout); err != nil {
		return err
	}
	if err := deletePods(ctx, client, o.timeout); err != nil {
		return err
	}

	fmt.Fprintf(stderr, "creating %d pods at once (%d parallel creates) ...\n", o.pods, o.concurrency)
	cpuBefore := nodeCPU(dataDir)
	busyBefore, totalBefore := machineCPU()
	burstStart := time.Now()
	report.burst, err = startPods(ctx, client, "burst", o.pods, o.concurrency, o.timeout)
	if err != nil {
		return err
	}
	report.burstWall = time.Since(burstStart)
	cpuAfter := nodeCPU(dataDir)
	busyAfter, totalAfter := machineCPU()
	report.burstCPUByKind = map[string]time.Duration{}
	for kind, used := range cpuAfter {
		report.burstCPUByKind[kind] = used - cpuBefore[kind]
		report.burstCPU += used - cpuBefore[kind]
	}
	report.machineBusy, report.machineTotal = busyAfter-busyBefore, totalAfter-totalBefore

	fmt.Fprintf(stderr, "sampling the node with %d pods running for %s ...\n", o.pods, o.sampleFor)
	time.Sleep(2 * time.Second) // let post-start status updates settle
	report.steady, err = sampleNode(ctx, dataDir, o.sampleFor)
	if err != nil {
		return err
	}
	report.loadDuring = loadAverage()

	fmt.Fprintf(stderr, "deleting %d pods ...\n", o.pods)
	deleteStart := time.Now()
	if err := deletePods(ctx, client, o.timeout); err != nil {
		return err
	}
	report.deleteWall = time.Since(deleteStart)

	if o.sequential > 0 {
		fmt.Fprintf(stderr, "creating %d pods one after another ...\n", o.sequential)
		before := nodeCPU(dataDir)
		for i := range o.sequential {
			lat, err := startPods(ctx, client, fmt.Sprintf("seq%03d", i), 1, 1, o.timeout)
			if err != nil {
				return err
			}
			report.sequential.add(lat)
		}
		report.sequentialCPUByKind = map[string]time.Duration{}
		for kind, used := range nodeCPU(dataDir) {
			report.sequentialCPUByKind[kind] = used - before[kind]
			report.sequentialCPU += used - before[kind]
		}
		if err := deletePods(ctx, client, o.timeout); err != nil {
			return err
		}
	}
	if o.traced > 0 {
		fmt.Fprintf(stderr, "creating %d pods with strace following containerd ...\n", o.traced)
		report.execs, err = traceExecs(ctx, client, dataDir, o.traced, o.timeout)
		if err != nil {
			return err
		}
		report.traced = o.traced
	}
	report.write(stdout)
	succeeded = true
	return nil
}

// startPods creates n pods named prefix-i with the given parallelism and returns, per pod, the
// time from its create call to the watch event that first shows it Running.
func startPods(ctx context.Context, client kubernetes.Interface, prefix string, n, parallel int, timeout time.Duration) (stages, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return stages{}, err
	}
	w, err := client.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return stages{}, err
	}
	defer w.Stop()

	var mu sync.Mutex
	created := map[string]time.Time{}
	// What the watch showed first: bound by the scheduler, picked up by the kubelet (its first
	// status carries startTime), Running.
	scheduled, acknowledged, running := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	createErrs := make(chan error, n)
	names := make(chan string)
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for name := range names {
				start := time.Now()
				mu.Lock()
				created[name] = start
				mu.Unlock()
				if _, err := client.CoreV1().Pods(namespace).Create(ctx, benchPod(name), metav1.CreateOptions{}); err != nil {
					createErrs <- fmt.Errorf("create pod %s: %w", name, err)
				}
			}
		})
	}
	go func() {
		for i := range n {
			names <- fmt.Sprintf("%s-%03d", prefix, i)
		}
		close(names)
	}()

	for {
		mu.Lock()
		done := len(running) == n
		mu.Unlock()
		if done {
			break
		}
		select {
		case err := <-createErrs:
			return stages{}, err
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			return stages{}, fmt.Errorf("%d of %d pods running after %s", len(running), n, timeout)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return stages{}, errors.New("pod watch closed")
			}
			if ev.Type == watch.Error {
				return stages{}, fmt.Errorf("pod watch: %v", apierrors.FromObject(ev.Object))
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || !strings.HasPrefix(pod.Name, prefix+"-") {
				continue
			}
			seen := time.Now()
			mu.Lock()
			firstSeen(scheduled, pod.Name, seen, pod.Spec.NodeName != "")
			firstSeen(acknowledged, pod.Name, seen, pod.Status.StartTime != nil)
			firstSeen(running, pod.Name, seen, pod.Status.Phase == corev1.PodRunning)
			mu.Unlock()
		}
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	var st stages
	for name, at := range running {
		st.running = append(st.running, at.Sub(created[name]))
		if t, ok := scheduled[name]; ok {
			st.scheduled = append(st.scheduled, t.Sub(created[name]))
		}
		if t, ok := acknowledged[name]; ok {
			st.acknowledged = append(st.acknowledged, t.Sub(created[name]))
		}
	}
	return st, nil
}

// stages are per-pod latencies from the create call to what a watch showed.
type stages struct {
	scheduled, acknowledged, running []time.Duration
}

func (s *stages) add(o stages) {
	s.scheduled = append(s.scheduled, o.scheduled...)
	s.acknowledged = append(s.acknowledged, o.acknowledged...)
	s.running = append(s.running, o.running...)
}

func firstSeen(seen map[string]time.Time, name string, at time.Time, happened bool) {
	if _, dup := seen[name]; happened && !dup {
		seen[name] = at
	}
}

func benchPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": "podbench"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "c", Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sleep", "inf"},
			}},
		},
	}
}

// deletePods deletes every pod of the namespace and waits until they are gone (the kubelet has
// stopped their containers).
func deletePods(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	if err := client.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete pods: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("pods still present %s after deleting them", timeout)
}

// cleanUp is the exit path: every pod deleted (the kubelet reclaims each before its object
// goes), skiff stopped, and the data dir removed only when nothing of the node runs any more. A
// skiff that died is started again on the same data dir and ports to remove its pods.
func cleanUp(ctx context.Context, srv *bench.Server, opts bench.ServerOptions, stderr io.Writer) {
	if err := deleteAllPods(ctx, srv); err != nil {
		fmt.Fprintln(stderr, "cleanup:", err, "- starting skiff again to remove the pods")
		srv.Stop()
		again, err := bench.StartServer(ctx, opts)
		if err != nil {
			fmt.Fprintln(stderr, "cleanup: start skiff again:", err)
		} else {
			srv = again
			if err := deleteAllPods(ctx, srv); err != nil {
				fmt.Fprintln(stderr, "cleanup:", err)
			}
		}
	}
	srv.Stop()
	if left := processesMentioning(opts.DataDir); len(left) > 0 {
		fmt.Fprintf(stderr, "WARNING: processes of the node outlived it; keeping %s:\n%s\n", opts.DataDir, strings.Join(left, "\n"))
		return
	}
	os.RemoveAll(opts.DataDir)
}

// deleteAllPods deletes every pod in every namespace and waits until they are gone.
func deleteAllPods(ctx context.Context, srv *bench.Server) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cfg, err := srv.RESTConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	namespaces, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range namespaces.Items {
		_ = client.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}, metav1.ListOptions{})
	}
	for ctx.Err() == nil {
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return errors.New("pods still present after 2 minutes")
}

// freePorts reserves n distinct loopback ports by listening on them together, then releases them.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func waitNodeReady(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, n := range nodes.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						return nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("no node Ready within %s", timeout)
}

// waitServiceAccount waits for the namespace's default service account, which pods need.
func waitServiceAccount(ctx context.Context, client kubernetes.Interface) error {
	for range 120 {
		if _, err := client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return errors.New("no default service account in the benchmark namespace after 30s")
}

func importBusybox(ctx context.Context, binary, dataDir string) error {
	out, err := exec.CommandContext(ctx, binary, "images", "build-busybox", "--out", dataDir).Output()
	if err != nil {
		return fmt.Errorf("build busybox image: %w", err)
	}
	if out, err := exec.CommandContext(ctx, binary, "images", "import", "--data-dir", dataDir, strings.TrimSpace(string(out))).CombinedOutput(); err != nil {
		return fmt.Errorf("import busybox image: %w\n%s", err, out)
	}
	return nil
}

func summarize(samples []time.Duration) (p50, p99, maximum time.Duration) {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	if len(sorted) == 0 {
		return 0, 0, 0
	}
	rank := func(p float64) time.Duration {
		i := int(float64(len(sorted))*p/100+0.999999) - 1 // nearest rank
		return sorted[max(0, min(i, len(sorted)-1))]
	}
	return rank(50), rank(99), sorted[len(sorted)-1]
}
