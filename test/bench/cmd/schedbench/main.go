// Command schedbench measures skiff's scheduler end to end through the API server: it starts
// `skiff server --roles etcd,controlplane` (node lifecycle controller off, so fake nodes without
// Leases stay schedulable and the figures are about scheduling, not Lease writes; node IPAM off,
// since 5,000 nodes exhaust the default /16 cluster CIDR and it would retry them), then for each
// scenario creates fake nodes (Node objects with capacity and Ready=True, no kubelet) and every
// pending pod up front, and reports the time until all are bound (pods/s) and the p50/p99 time
// from a pod's creation to its binding, as seen by a watch.
//
//	go build -o bin/skiff ./cmd/skiff && go run ./test/bench/cmd/schedbench --skiff bin/skiff
//
// Scenarios (--scenarios, comma-separated): plain-5000 (10,000 plain pods on 5,000 nodes, the case
// Kubernetes' scheduler_perf expects >= 270 pods/s for), plain-500 (10,000 pods on 500 nodes) and
// mixed-5000 / mixed-500 (preferred pod anti-affinity, a zone spread and required node affinity on
// half the pods). Each scenario deletes its objects before the next starts; all run against one
// server.
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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	schedbench "github.com/skiff-sh/skiff/internal/scheduler/bench"
	"github.com/skiff-sh/skiff/test/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "schedbench:", err)
		}
		os.Exit(1)
	}
}

type scenario struct {
	workload string
	nodes    int
}

type options struct {
	binary     string
	scenarios  []scenario
	pods       int
	workers    int
	timeout    time.Duration
	serverLog  string
	serverArgs []string
	cpuProfile string
	label      string
}

func parseScenarios(s string) ([]scenario, error) {
	var out []scenario
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		workload, nodes, ok := strings.Cut(name, "-")
		n, err := strconv.Atoi(nodes)
		if !ok || err != nil || n <= 0 || (workload != schedbench.Plain && workload != schedbench.Mixed) {
			return nil, fmt.Errorf("--scenarios: %q is not WORKLOAD-NODES with WORKLOAD plain or mixed", name)
		}
		out = append(out, scenario{workload: workload, nodes: n})
	}
	if len(out) == 0 {
		return nil, errors.New("--scenarios: none given")
	}
	return out, nil
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("schedbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.binary, "skiff", "", "skiff binary (default: go build ./cmd/skiff into a temporary directory)")
	scenarios := fs.String("scenarios", "plain-5000,plain-500,mixed-5000", "comma-separated WORKLOAD-NODES runs; WORKLOAD is plain or mixed")
	fs.IntVar(&o.pods, "pods", 10000, "pending pods created up front in each scenario")
	fs.IntVar(&o.workers, "workers", 32, "parallel create calls for nodes and pods")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long one scenario may take")
	fs.StringVar(&o.serverLog, "server-log", "", "file for skiff's log (default: discarded)")
	serverArgs := fs.String("server-args", "--controllers=*,-nodelifecycle,-nodeipam", "extra arguments for skiff server, space-separated")
	fs.StringVar(&o.cpuProfile, "cpu-profile", "", "write a CPU profile of the server (API server and scheduler, one process) during the first scenario's scheduling to this file")
	fs.StringVar(&o.label, "label", "", "a note printed with the figures")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.scenarios, err = parseScenarios(*scenarios); err != nil {
		return o, err
	}
	if o.pods < 1 {
		return o, fmt.Errorf("--pods: %d is not positive", o.pods)
	}
	o.serverArgs = strings.Fields(*serverArgs)
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if o.binary == "" {
		dir, err := os.MkdirTemp("", "schedbench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.binary = filepath.Join(dir, "skiff")
		fmt.Fprintln(stderr, "building ./cmd/skiff ...")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.binary, "./cmd/skiff")
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/skiff (run from the repository root or pass --skiff): %w", err)
		}
	}
	var serverLog io.Writer
	if o.serverLog != "" {
		f, err := os.Create(o.serverLog)
		if err != nil {
			return err
		}
		defer f.Close()
		serverLog = f
	}
	fmt.Fprintln(stderr, "starting", o.binary, "server", strings.Join(o.serverArgs, " "), "...")
	srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: o.binary, Log: serverLog, ExtraArgs: o.serverArgs})
	if err != nil {
		return err
	}
	defer srv.Stop()
	cfg, err := srv.RESTConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "machine: %s; load average before: %s\n", bench.DescribeMachine(), loadAverage())
	if o.label != "" {
		fmt.Fprintln(stdout, "note:", o.label)
	}
	for i, sc := range o.scenarios {
		fmt.Fprintf(stderr, "%s: %d nodes, %d pods ...\n", sc.workload, sc.nodes, o.pods)
		var stopProfile func() error
		if i == 0 && o.cpuProfile != "" {
			stopProfile = startServerProfile(ctx, client, o.cpuProfile, stderr)
		}
		cpuBefore, _ := srv.CPUTime()
		res, err := schedbench.RunBenchmark(ctx, client, schedbench.Options{
			Nodes: sc.nodes, Pods: o.pods, Workload: sc.workload, Namespace: "schedbench", Workers: o.workers, Timeout: o.timeout,
		})
		cpuAfter, _ := srv.CPUTime()
		if stopProfile != nil {
			if perr := stopProfile(); perr != nil {
				fmt.Fprintln(stderr, "cpu profile:", perr)
			}
		}
		if err != nil {
			return fmt.Errorf("%s-%d: %w", sc.workload, sc.nodes, err)
		}
		fmt.Fprintf(stdout, "%s\n  server CPU during the scenario (create nodes, pods, schedule, clean up): %s; load average after: %s\n",
			res, (cpuAfter - cpuBefore).Round(time.Millisecond), loadAverage())
	}
	return nil
}

// startServerProfile collects a 30 s CPU profile of the skiff process through the API server's
// /debug/pprof/profile (the scheduler runs in the same process) and returns a function that waits
// for it and writes it out.
func startServerProfile(ctx context.Context, client kubernetes.Interface, path string, stderr io.Writer) func() error {
	done := make(chan error, 1)
	go func() {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "30").Timeout(2 * time.Minute).DoRaw(ctx)
		if err != nil {
			done <- fmt.Errorf("fetch profile: %w", err)
			return
		}
		done <- os.WriteFile(path, body, 0o644)
	}()
	fmt.Fprintln(stderr, "profiling the server for 30s into", path)
	return func() error { return <-done }
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}
