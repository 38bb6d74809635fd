// Command densitybench measures a control plane under Kubernetes' density workload: simulated nodes
// (the simnode command, its own process), Deployments whose pods fill them (default 500 nodes, 150
// Deployments of 100 replicas: 30 pods per node, 15,000 pods), all created at once. It prints the
// time until every pod is Running, pod startup p50/p99 (first seen to Running, from the
// benchmark's watch), scheduling latency p99 (first seen to bound), API call latency p99 per verb
// from the API server's apiserver_request_sli_duration_seconds (without priority-and-fairness queue
// waits and webhook calls, as the SLI is defined) against Kubernetes' SLOs, beside the whole
// request's apiserver_request_duration_seconds, and the peak
// RSS and CPU seconds of every process.
//
// The control plane is either a skiff server (`skiff server --roles etcd,controlplane`, the built
// binary) or, with --upstream DIR, Kubernetes' kube-apiserver, kube-controller-manager and
// kube-scheduler from DIR with Debian's etcd.
//
//	go build -o /tmp/skiff ./cmd/skiff && go build -o /tmp/simnode ./test/simnode/cmd/simnode
//	go run ./test/bench/cmd/densitybench --skiff /tmp/skiff --simnode /tmp/simnode
//	go run ./test/bench/cmd/densitybench --upstream /root/.cache/skiff-upstream/bin --simnode /tmp/simnode
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/test/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "densitybench:", err)
		}
		os.Exit(1)
	}
}

type options struct {
	skiff, simnode, upstream, etcd string
	label, serverLog               string
	serverArgs, simArgs            string
	nodes, deployments, replicas   int
	simWorkers                     int
	heartbeat                      time.Duration
	timeout                        time.Duration
	settle                         time.Duration
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("densitybench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.skiff, "skiff", "", "skiff binary (default: go build ./cmd/skiff)")
	fs.StringVar(&o.simnode, "simnode", "", "simnode binary (go build ./test/simnode/cmd/simnode); required")
	fs.StringVar(&o.upstream, "upstream", "", "directory with kube-apiserver, kube-controller-manager and kube-scheduler: measure them instead of skiff")
	fs.StringVar(&o.etcd, "etcd", "/usr/bin/etcd", "etcd binary for --upstream")
	fs.StringVar(&o.serverArgs, "server-args", "", "extra skiff server arguments, space-separated")
	fs.StringVar(&o.simArgs, "sim-args", "", "extra simnode arguments, space-separated")
	fs.StringVar(&o.label, "label", "", "a note printed with the figures")
	fs.StringVar(&o.serverLog, "server-log", "", "file for the control plane's log (default: discarded)")
	fs.IntVar(&o.nodes, "nodes", 500, "simulated nodes")
	fs.IntVar(&o.deployments, "deployments", 150, "Deployments created at once")
	fs.IntVar(&o.replicas, "replicas", 100, "replicas per Deployment")
	fs.IntVar(&o.simWorkers, "sim-workers", 32, "pods the simulated kubelets handle at once")
	fs.DurationVar(&o.heartbeat, "heartbeat", 10*time.Second, "simulated nodes' Lease renewal interval")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up waiting for pods after this long")
	fs.DurationVar(&o.settle, "settle", 15*time.Second, "keep sampling memory this long after every pod runs")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if o.simnode == "" {
		errs = append(errs, errors.New("--simnode is required"))
	}
	for name, v := range map[string]int{"--nodes": o.nodes, "--deployments": o.deployments, "--replicas": o.replicas, "--sim-workers": o.simWorkers} {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", name, v))
		}
	}
	return o, errors.Join(errs...)
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	serverLog := io.Discard
	if o.serverLog != "" {
		f, err := os.Create(o.serverLog)
		if err != nil {
			return err
		}
		defer f.Close()
		serverLog = f
	}

	var procs []proc
	var kubeconfig, subject string
	if o.upstream != "" {
		logf("starting upstream control plane from %s ...", o.upstream)
		up, err := startUpstream(ctx, o.upstream, o.etcd, serverLog)
		if err != nil {
			return err
		}
		defer up.stop()
		procs, kubeconfig, subject = up.processes(), up.kubeconfig, "upstream (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)"
	} else {
		binary, cleanup, err := bench.EnsureBinary(ctx, o.skiff, stderr)
		if err != nil {
			return err
		}
		defer cleanup()
		logf("starting %s ...", binary)
		extra := append([]string{"--cluster-cidr", "10.0.0.0/10"}, strings.Fields(o.serverArgs)...)
		srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: binary, Log: serverLog, ExtraArgs: extra})
		if err != nil {
			return err
		}
		defer srv.Stop()
		procs, kubeconfig, subject = []proc{{name: "skiff server", pid: srv.PID(), controlPlane: true}}, srv.Kubeconfig, "skiff "+binary+" "+o.serverArgs
	}
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	logf("starting simnode with %d nodes ...", o.nodes)
	sim := exec.CommandContext(ctx, o.simnode, append([]string{"--kubeconfig", kubeconfig, "--nodes", strconv.Itoa(o.nodes),
		"--workers", strconv.Itoa(o.simWorkers), "--heartbeat", o.heartbeat.String(), "--qps", "5000"}, strings.Fields(o.simArgs)...)...)
	sim.Stdout, sim.Stderr = serverLog, serverLog
	if err := sim.Start(); err != nil {
		return fmt.Errorf("start simnode: %w", err)
	}
	defer func() { _ = sim.Process.Signal(syscall.SIGTERM); _ = sim.Wait() }()
	procs = append(procs, proc{name: "simnode", pid: sim.Process.Pid})
	registered := time.Now()
	if err := waitNodesReady(ctx, client, o.nodes, 10*time.Minute); err != nil {
		return err
	}
	logf("%d nodes ready after %s", o.nodes, time.Since(registered).Round(time.Second))

	total := o.deployments * o.replicas
	obs := newObserver(total)
	stop := make(chan struct{})
	factory, err := obs.start(client, stop)
	if err != nil {
		return err
	}
	defer func() { close(stop); factory.Shutdown() }()
	before, err := scrapeLatency(ctx, client)
	if err != nil {
		return fmt.Errorf("scrape metrics: %w", err)
	}
	samp := newSampler(procs, 500*time.Millisecond)
	load0 := loadAverage()
	start := time.Now()
	logf("creating %d Deployments of %d replicas ...", o.deployments, o.replicas)
	if err := createDeployments(ctx, client, o.deployments, int32(o.replicas)); err != nil {
		samp.finish()
		return err
	}
	if err := waitAll(ctx, obs, samp, o.timeout, logf, start); err != nil {
		samp.finish()
		return err
	}
	allRunning := time.Since(start)
	logf("all %d pods Running after %s; sampling %s more", total, allRunning.Round(time.Millisecond), o.settle)
	after, err := scrapeLatency(ctx, client)
	if err != nil {
		return fmt.Errorf("scrape metrics: %w", err)
	}
	select {
	case <-time.After(o.settle):
	case <-ctx.Done():
	}
	usages, peakSum := samp.finish()
	startup, scheduling := obs.latencies()
	r := report{
		label: o.label, settle: o.settle, subject: subject, machine: bench.DescribeMachine().String(), load: load0 + " -> " + loadAverage(),
		nodes: o.nodes, deployments: o.deployments, replicas: o.replicas, allRunning: allRunning,
		startupP50: pct(startup, 50), startupP99: pct(startup, 99), schedP50: pct(scheduling, 50), schedP99: pct(scheduling, 99),
		verbs: latencyBetween(before, after), usages: usages, peakControlPlane: peakSum,
	}
	r.write(stdout)
	return nil
}

func waitAll(ctx context.Context, obs *observer, samp *sampler, timeout time.Duration, logf func(string, ...any), start time.Time) error {
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case <-obs.all:
			return nil
		case <-progress.C:
			seen, scheduled, running := obs.counts()
			logf("%s: %d pods seen, %d scheduled, %d Running; control plane peak RSS so far %d MiB", time.Since(start).Round(time.Second), seen, scheduled, running, samp.peakSoFar()>>20)
		case <-deadline:
			seen, scheduled, running := obs.counts()
			return fmt.Errorf("after %s only %d of %d pods Running (%d seen, %d scheduled)", timeout, running, obs.want, seen, scheduled)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

type report struct {
	label, subject, machine, load              string
	settle                                     time.Duration
	nodes, deployments, replicas               int
	allRunning                                 time.Duration
	startupP50, startupP99, schedP50, schedP99 time.Duration
	verbs                                      []verbLatency
	usages                                     []usage
	peakControlPlane                           int64
}

func (r report) write(w io.Writer) {
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	sec := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	fmt.Fprintf(w, "## density: %d nodes, %d Deployments x %d replicas (%d pods)\n\n", r.nodes, r.deployments, r.replicas, r.deployments*r.replicas)
	fmt.Fprintf(w, "- subject: %s\n- machine: %s; load average %s\n", r.subject, r.machine, r.load)
	fmt.Fprintf(w, "- CPU seconds are from the first Deployment create until %s after all pods ran\n", r.settle)
	if r.label != "" {
		fmt.Fprintf(w, "- note: %s\n", r.label)
	}
	fmt.Fprintf(w, "\n| figure | value | SLO |\n|---|---|---|\n")
	fmt.Fprintf(w, "| all pods Running | %s | |\n", sec(r.allRunning))
	fmt.Fprintf(w, "| pod startup p50 / p99 | %s / %s | p99 <= 5 s |\n", sec(r.startupP50), sec(r.startupP99))
	fmt.Fprintf(w, "| scheduling latency p50 / p99 | %s / %s | |\n", sec(r.schedP50), sec(r.schedP99))
	for _, v := range r.verbs {
		ok := "met"
		if v.p99 > v.slo {
			ok = "MISSED"
		}
		fmt.Fprintf(w, "| API %s p99 (%.0f calls): SLI / whole request | %s / %s | SLI <= %s (%s) |\n", v.verb, v.count, sec(v.p99), sec(v.p99Total), v.slo, ok)
	}
	fmt.Fprintf(w, "| peak RSS, control plane (sum) | %s | target <= 1 GiB |\n", mib(r.peakControlPlane))
	for _, u := range r.usages {
		role := ""
		if !u.controlPlane {
			role = " (not control plane)"
		}
		fmt.Fprintf(w, "| %s%s: peak RSS / CPU | %s / %.1f s | |\n", u.name, role, mib(u.peakRSS), u.cpu.Seconds())
	}
	fmt.Fprintln(w)
}
