// Command listbench loads pods into API servers and measures LIST of all pods, side by side: one or
// more skiff binaries (`skiff server --roles etcd,controlplane`, e.g. before and after a change) and
// upstream kube-apiserver on Debian's etcd. For each: the load time, the RSS after loading, and per
// encoding (json, protobuf) the LIST latency p50/p99 (the whole body read, not decoded), the server
// CPU per LIST and the server's Go allocations per LIST.
//
//	go run ./test/bench/cmd/listbench --skiff before=/tmp/skiff-old,after=bin/skiff \
//	    --upstream /root/.cache/skiff-upstream/bin --pods 15000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/skiff-sh/skiff/test/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "listbench:", err)
		}
		os.Exit(1)
	}
}

type target struct{ name, binary string }

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("listbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	skiffs := fs.String("skiff", "", "comma-separated name=binary skiff builds to measure (e.g. before=/tmp/a,after=bin/skiff)")
	upstream := fs.String("upstream", "", "directory with upstream kube-apiserver to measure too (empty: skip)")
	etcd := fs.String("etcd", "/usr/bin/etcd", "etcd binary for the upstream API server")
	pods := fs.Int("pods", 15000, "pods to load")
	lists := fs.Int("lists", 20, "LISTs measured per encoding")
	conc := fs.Int("concurrency", 32, "concurrent creates while loading")
	encodings := fs.String("encodings", "json,protobuf", "comma-separated response encodings")
	serverLog := fs.String("server-log", "", "file for the servers' logs (default: discarded)")
	parallel := fs.Int("parallel-lists", 0, "end with this many JSON LISTs of all pods at once, sampling the server's RSS (0: skip)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var targets []target
	for _, part := range strings.Split(*skiffs, ",") {
		if part == "" {
			continue
		}
		name, binary, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("--skiff: %q is not name=binary", part)
		}
		targets = append(targets, target{name, binary})
	}
	if *upstream != "" {
		targets = append(targets, target{"upstream", ""})
	}
	if len(targets) == 0 {
		return errors.New("nothing to measure: give --skiff and/or --upstream")
	}
	var logOut io.Writer = io.Discard
	if *serverLog != "" {
		f, err := os.Create(*serverLog)
		if err != nil {
			return err
		}
		defer f.Close()
		logOut = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := bench.ListOptions{Pods: *pods, Namespace: "listbench", Concurrency: *conc, Lists: *lists, Encodings: strings.Split(*encodings, ","), ParallelLists: *parallel}
	fmt.Fprintf(stdout, "# LIST of all pods, %d pods, %d LISTs per encoding; %s; %s\n", *pods, *lists, bench.DescribeMachine(), time.Now().UTC().Format(time.RFC3339))
	for _, tg := range targets {
		fmt.Fprintf(stderr, "measuring %s ...\n", tg.name)
		res, err := measure(ctx, tg, *upstream, *etcd, opts, logOut)
		if err != nil {
			return fmt.Errorf("%s: %w", tg.name, err)
		}
		printResult(stdout, res)
	}
	return nil
}

func measure(ctx context.Context, tg target, upstreamDir, etcd string, opts bench.ListOptions, logOut io.Writer) (bench.ListResult, error) {
	if tg.binary == "" {
		u, err := bench.StartUpstream(ctx, bench.UpstreamOptions{Dir: upstreamDir, Etcd: etcd, Log: logOut})
		if err != nil {
			return bench.ListResult{}, err
		}
		defer u.Stop()
		return bench.RunList(ctx, bench.ListTarget{Name: tg.name, Config: u.Config, PIDs: []int{u.APIServerPID(), u.EtcdPID()}, APIServerPID: u.APIServerPID()}, opts)
	}
	srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: tg.binary, Log: logOut})
	if err != nil {
		return bench.ListResult{}, err
	}
	defer srv.Stop()
	cfg, err := srv.RESTConfig()
	if err != nil {
		return bench.ListResult{}, err
	}
	return bench.RunList(ctx, bench.ListTarget{Name: tg.name, Config: cfg, PIDs: []int{srv.PID()}, APIServerPID: srv.PID()}, opts)
}

func printResult(out io.Writer, r bench.ListResult) {
	pids := make([]int, 0, len(r.RSSAfter))
	var total int64
	for pid, rss := range r.RSSAfter {
		pids = append(pids, pid)
		total += rss
	}
	sort.Ints(pids)
	parts := make([]string, 0, len(pids))
	for _, pid := range pids {
		parts = append(parts, fmt.Sprintf("%d MiB", r.RSSAfter[pid]>>20))
	}
	fmt.Fprintf(out, "\n## %s: loaded in %.1f s, pod %d B (JSON), RSS after loading %d MiB (%s), load average at end %s\n",
		r.Target, r.LoadTime.Seconds(), r.PodBytes, total>>20, strings.Join(parts, " + "), r.LoadAvgEnd)
	fmt.Fprintln(out, "| encoding | body MiB | p50 ms | p99 ms | max ms | server CPU ms/LIST | server alloc MiB/LIST |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, e := range r.PerEncode {
		alloc := "n/a"
		if e.AllocPerList >= 0 {
			alloc = fmt.Sprintf("%.1f", float64(e.AllocPerList)/(1<<20))
		}
		fmt.Fprintf(out, "| %s | %.1f | %.0f | %.0f | %.0f | %.0f | %s |\n", e.Encoding, float64(e.BodyBytes)/(1<<20),
			ms(e.Latency.P50), ms(e.Latency.P99), ms(e.Latency.Max), ms(e.CPUPerList), alloc)
	}
	if p := r.Parallel; p.Lists > 0 {
		fmt.Fprintf(out, "\n%d JSON LISTs of all pods at once: all answered in %.1f s, %d failed; server RSS %d MiB before, %d MiB at the peak, %d MiB 10 s after\n",
			p.Lists, p.Took.Seconds(), p.Failed, p.RSSBefore>>20, p.RSSPeak>>20, p.RSSAfter>>20)
		if p.Failed > 0 {
			fmt.Fprintf(out, "first failure: %s\n", p.FirstError)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
