// Command schedbench measures skiff's scheduler end to end through the API server: it starts
// `skiff server --roles etcd,controlplane` (node lifecycle controller off, so fake nodes without
// Leases stay schedulable and the figures are about scheduling, not Lease writes; node IPAM off,
// since 5,000 nodes exhaust the default /16 cluster CIDR and it would retry them), then for each
// scenario creates fake nodes (Node objects with capacity and Ready=True, no kubelet) and every
// pending pod up front, and reports the time until all are bound (pods/s) and the p50/p99 time
// to binding, as seen by a watch. By default (--hold) the benchmark holds the scheduler's leader
// Lease while it creates the pods, so all are pending when skiff's scheduler takes the Lease back
// and the clock starts: the figures are then the scheduler's (with its API writes), not the rate
// at which this machine's API server accepts pod creations. --hold=false streams pods in while
// the scheduler runs and times from each pod's creation.
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

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

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
	binary       string
	scenarios    []scenario
	pods         int
	workers      int
	timeout      time.Duration
	serverLog    string
	serverArgs   []string
	cpuProfile   string
	allocProfile string
	profileAt    time.Duration
	profileAtRel bool
	profileSecs  int
	label        string
	hold         bool
	upstream     string
	etcd         string
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
	fs.StringVar(&o.allocProfile, "alloc-profile", "", "write the server's allocations over the same window as --cpu-profile (a delta of /debug/pprof/allocs) to this file")
	fs.DurationVar(&o.profileAt, "cpu-profile-after", 0, "start the CPU profile this long after the first scenario starts (skip node creation)")
	fs.BoolVar(&o.profileAtRel, "profile-at-release", false, "start the profiles when the scheduler is released (with --hold), so they cover scheduling only; --cpu-profile-after is then counted from the release")
	fs.IntVar(&o.profileSecs, "profile-seconds", 30, "how long the profiles last")
	fs.BoolVar(&o.hold, "hold", true, "keep skiff's scheduler from binding (by holding its leader Lease) until every pod exists, so the figures are the scheduler's and not the pod creation rate; false measures with pods streaming in")
	fs.StringVar(&o.label, "label", "", "a note printed with the figures")
	fs.StringVar(&o.upstream, "upstream", "", "directory with Kubernetes' kube-apiserver and kube-scheduler: measure them (with --etcd) instead of skiff")
	fs.StringVar(&o.etcd, "etcd", "/usr/bin/etcd", "etcd binary for --upstream")
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
	if o.profileSecs < 1 {
		return o, fmt.Errorf("--profile-seconds: %d is not positive", o.profileSecs)
	}
	if o.profileAtRel && !o.hold {
		return o, errors.New("--profile-at-release needs --hold: without it there is no release")
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
	if o.upstream != "" {
		if err := checkUpstream(o.upstream); err != nil {
			return err
		}
	} else if o.binary == "" {
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
	var srv controlPlane
	if o.upstream != "" {
		fmt.Fprintln(stderr, "starting etcd, kube-apiserver (kube-scheduler per scenario) from", o.upstream, "...")
		u, err := startUpstream(ctx, o.upstream, o.etcd, serverLog)
		if err != nil {
			return err
		}
		srv = u
	} else {
		fmt.Fprintln(stderr, "starting", o.binary, "server", strings.Join(o.serverArgs, " "), "...")
		s, err := bench.StartServer(ctx, bench.ServerOptions{Binary: o.binary, Log: serverLog, ExtraArgs: o.serverArgs})
		if err != nil {
			return err
		}
		srv = skiffServer{s}
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
	if o.upstream != "" {
		fmt.Fprintln(stdout, "control plane: upstream kube-apiserver and kube-scheduler from", o.upstream, "with", o.etcd)
	} else {
		fmt.Fprintln(stdout, "control plane:", o.binary)
	}
	if o.label != "" {
		fmt.Fprintln(stdout, "note:", o.label)
	}
	for i, sc := range o.scenarios {
		fmt.Fprintf(stderr, "%s: %d nodes, %d pods ...\n", sc.workload, sc.nodes, o.pods)
		var stopProfile func() error
		// released is closed when the scheduler is let go (or at once without --profile-at-release).
		released := make(chan struct{})
		if !o.profileAtRel {
			close(released)
		}
		if i == 0 && (o.cpuProfile != "" || o.allocProfile != "") {
			stopProfile = startServerProfiles(ctx, client, map[string]string{"profile": o.cpuProfile, "allocs": o.allocProfile},
				released, o.profileAt, o.profileSecs, stderr)
		}
		opts := schedbench.Options{
			Nodes: sc.nodes, Pods: o.pods, Workload: sc.workload, Namespace: "schedbench", Workers: o.workers, Timeout: o.timeout,
		}
		if o.hold {
			fmt.Fprintln(stderr, "holding the scheduler's Lease until all pods exist ...")
			if err := holdScheduler(ctx, client); err != nil {
				return err
			}
			opts.Release = func(ctx context.Context) error {
				err := releaseScheduler(ctx, client)
				if o.profileAtRel {
					close(released)
				}
				return err
			}
		}
		if err := srv.BeforeRelease(ctx); err != nil {
			return err
		}
		cpuBefore, _ := srv.CPUTime()
		res, err := schedbench.RunBenchmark(ctx, client, opts)
		cpuAfter, _ := srv.CPUTime()
		srv.AfterScenario()
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

// startServerProfiles collects profiles of seconds each of the skiff process through the API
// server's /debug/pprof (the scheduler runs in the same process), one per non-empty file in files
// (keyed by profile name: "profile" is CPU, "allocs" a delta of allocations over the same window),
// starting after once start is closed, and returns a function that waits for them and writes them
// out.
func startServerProfiles(ctx context.Context, client kubernetes.Interface, files map[string]string, start <-chan struct{},
	after time.Duration, seconds int, stderr io.Writer) func() error {
	var g errgroup.Group
	for name, path := range files {
		if path == "" {
			continue
		}
		g.Go(func() error {
			select {
			case <-start:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case <-time.After(after):
			case <-ctx.Done():
				return ctx.Err()
			}
			body, err := client.Discovery().RESTClient().Get().AbsPath("/debug/pprof/"+name).Param("seconds", strconv.Itoa(seconds)).Timeout(time.Duration(seconds)*time.Second + 2*time.Minute).DoRaw(ctx)
			if err != nil {
				return fmt.Errorf("fetch %s profile: %w", name, err)
			}
			return os.WriteFile(path, body, 0o644)
		})
		fmt.Fprintf(stderr, "profiling the server (%s) for %ds, starting %s after the start of the scenario (or the release, with --profile-at-release), into %s\n",
			name, seconds, after, path)
	}
	return g.Wait
}

// The scheduler's leader Lease, as skiff's defaults name it, and who holds it while pods are made.
const (
	leaseNamespace = "kube-system"
	leaseName      = "kube-scheduler"
	holdIdentity   = "schedbench-hold"
	// schedulerRenewDeadline is skiff's (Kubernetes') default: a leader that cannot renew for this
	// long stops scheduling.
	schedulerRenewDeadline = 10 * time.Second
)

// holdScheduler takes the scheduler's Lease for an hour. skiff's scheduler keeps its informers
// and queue but, unable to renew, stops binding within its renew deadline; this waits that out.
func holdScheduler(ctx context.Context, client kubernetes.Interface) error {
	leases := client.CoordinationV1().Leases(leaseNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		now := metav1.NewMicroTime(time.Now())
		hour := int32(3600)
		holder := holdIdentity
		l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName, Namespace: leaseNamespace},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &hour, AcquireTime: &now, RenewTime: &now}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// The scheduler created it meanwhile: take it over on the next try.
				return apierrors.NewConflict(coordinationv1.Resource("leases"), leaseName, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.AcquireTime, l.Spec.RenewTime = &holder, &hour, &now, &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("hold the scheduler Lease: %w", err)
	}
	select {
	case <-time.After(schedulerRenewDeadline + 2*time.Second):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// releaseScheduler deletes the held Lease and returns once skiff's scheduler has taken it (it
// campaigns every retry period), so the measurement starts when scheduling can.
func releaseScheduler(ctx context.Context, client kubernetes.Interface) error {
	leases := client.CoordinationV1().Leases(leaseNamespace)
	if err := leases.Delete(ctx, leaseName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release the scheduler Lease: %w", err)
	}
	for {
		l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != holdIdentity {
			return nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("wait for the scheduler to take its Lease: %w", err)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}
