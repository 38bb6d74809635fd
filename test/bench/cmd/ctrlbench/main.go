// Command ctrlbench measures skiff's controller manager and scheduler end to end: it starts a skiff
// server (etcd and controlplane roles, the built binary on loopback ports), simulates nodes in this
// process (internal/simnode: fake kubelets that report bound pods Running and Ready at once),
// creates many Deployments at the same moment and times how long until every one reports all its
// replicas available; then changes every Deployment's image and times the rolling updates until
// every one is complete (all replicas updated and available, no old pod left). It prints the
// machine and the figures.
//
//	go build -o bin/skiff ./cmd/skiff && go run ./test/bench/cmd/ctrlbench --skiff bin/skiff
//
// Defaults are the size: 500 nodes, 100 Deployments of 50 replicas (5,000 pods).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/internal/simnode"
	"github.com/skiff-sh/skiff/test/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "ctrlbench:", err)
		}
		os.Exit(1)
	}
}

type options struct {
	binary      string
	label       string
	nodes       int
	deployments int
	replicas    int
	timeout     time.Duration
	simWorkers  int
	serverLog   string
	skipRollout bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("ctrlbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.binary, "skiff", "", "skiff binary to benchmark (default: go build ./cmd/skiff into a temporary directory)")
	fs.StringVar(&o.label, "label", "", "a note printed with the figures")
	fs.IntVar(&o.nodes, "nodes", 500, "simulated nodes")
	fs.IntVar(&o.deployments, "deployments", 100, "Deployments created at once")
	fs.IntVar(&o.replicas, "replicas", 50, "replicas of each Deployment")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "give up on a phase after this long")
	fs.IntVar(&o.simWorkers, "sim-workers", 32, "pods the simulated kubelets handle at once")
	fs.StringVar(&o.serverLog, "server-log", "", "file for the server's log (default: discarded)")
	fs.BoolVar(&o.skipRollout, "skip-rollout", false, "measure only the creation")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	for name, v := range map[string]int{"--nodes": o.nodes, "--deployments": o.deployments, "--replicas": o.replicas, "--sim-workers": o.simWorkers} {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", name, v))
		}
	}
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout must be positive, got %s", o.timeout))
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

	binary, cleanupBinary, err := bench.EnsureBinary(ctx, o.binary, stderr)
	if err != nil {
		return err
	}
	defer cleanupBinary()
	o.binary = binary
	var serverLog io.Writer
	if o.serverLog != "" {
		f, err := os.Create(o.serverLog)
		if err != nil {
			return err
		}
		defer f.Close()
		serverLog = f
	}
	logf("starting %s ...", o.binary)
	// The default cluster CIDR holds 256 node /24s; a larger one gives every simulated node a podCIDR.
	srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: o.binary, Log: serverLog,
		ExtraArgs: []string{"--cluster-cidr", "10.0.0.0/10"}})
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

	logf("registering %d simulated nodes ...", o.nodes)
	sim, err := simnode.Start(ctx, simnode.Config{
		Client: client, Nodes: o.nodes, Workers: o.simWorkers,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return err
	}
	defer sim.Stop()

	r := &report{machine: bench.DescribeMachine(), label: o.label, opts: o}
	w := &workload{client: client, deployments: o.deployments, replicas: int32(o.replicas), logf: logf}
	if err := w.waitNodesSchedulable(ctx, o.nodes, 2*time.Minute); err != nil {
		return err
	}
	cpu0, _ := srv.CPUTime()
	self0 := processCPU()

	logf("creating %d Deployments of %d replicas ...", o.deployments, o.replicas)
	r.create, err = w.measure(ctx, o.timeout, w.createAll, "v1")
	if err != nil {
		return fmt.Errorf("creation: %w", err)
	}
	cpu1, _ := srv.CPUTime()
	self1 := processCPU()
	r.createServerCPU, r.createBenchCPU = cpu1-cpu0, self1-self0
	logf("all available after %s", r.create.total.Round(time.Millisecond))

	if !o.skipRollout {
		logf("changing every Deployment's image ...")
		r.rollout, err = w.measure(ctx, o.timeout, w.updateImageAll, "v2")
		if err != nil {
			return fmt.Errorf("rolling update: %w", err)
		}
		cpu2, _ := srv.CPUTime()
		self2 := processCPU()
		r.rolloutServerCPU, r.rolloutBenchCPU = cpu2-cpu1, self2-self1
		logf("all rolled out after %s", r.rollout.total.Round(time.Millisecond))
	}
	r.print(stdout)
	return nil
}
