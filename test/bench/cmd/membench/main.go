// Command membench loads pods into one or more skiff servers (`skiff server --roles
// etcd,controlplane`, e.g. before and after a change, or one binary with different flags) one after
// another and reports each server's memory: peak RSS while loading, RSS right after and once
// settled (anonymous vs file-backed, from /proc), the Go heap split from /metrics, and the LIST of
// all pods p50 and creates/s, so a memory change can be weighed against what it costs.
//
//	go run ./test/bench/cmd/membench --target 'before=/tmp/skiff-old' \
//	    --target 'after=/tmp/skiff-new --memory-limit=768Mi' --pods 15000
//
// A target is NAME=[ENV=VALUE ...] BINARY [FLAG ...] (space-separated; ENV=VALUE words before the
// binary are added to its environment).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skiff-sh/skiff/test/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "membench:", err)
		}
		os.Exit(1)
	}
}

type target struct {
	name, binary string
	env, args    []string
	// attached: binary is the kubeconfig and args[0] the pid of a server already running.
	attached bool
}

type targetList []target

func (l *targetList) String() string { return fmt.Sprint(len(*l)) }

func (l *targetList) Set(v string) error {
	t, err := parseTarget(v)
	if err != nil {
		return err
	}
	*l = append(*l, t)
	return nil
}

func parseTarget(v string) (target, error) {
	name, rest, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return target{}, fmt.Errorf("--target %q: want NAME=[ENV=VALUE ...] BINARY [FLAG ...]", v)
	}
	t := target{name: name}
	for _, w := range strings.Fields(rest) {
		switch {
		case t.binary == "" && strings.Contains(w, "=") && !strings.Contains(w, "/"):
			t.env = append(t.env, w)
		case t.binary == "":
			t.binary = w
		default:
			t.args = append(t.args, w)
		}
	}
	if t.binary == "" {
		return target{}, fmt.Errorf("--target %q: no binary", v)
	}
	return t, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("membench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var targets targetList
	fs.Var(&targets, "target", "NAME=[ENV=VALUE ...] BINARY [FLAG ...], repeatable: a skiff server to measure")
	pods := fs.Int("pods", 15000, "pods to load")
	conc := fs.Int("concurrency", 32, "concurrent creates while loading")
	settle := fs.Duration("settle", 60*time.Second, "wait after loading before the settled figures")
	lists := fs.Int("lists", 10, "JSON LISTs of all pods timed after settling")
	profiles := fs.String("heap-profiles", "", "directory for each server's heap profile after settling (empty: none)")
	serverLog := fs.String("server-log", "", "file for the servers' logs (default: discarded)")
	attach := fs.String("attach", "", "KUBECONFIG:PID of a skiff server already running, measured instead of starting one (it is left running)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *attach != "" {
		kc, pid, ok := strings.Cut(*attach, ":")
		if !ok {
			return fmt.Errorf("--attach %q: want KUBECONFIG:PID", *attach)
		}
		targets = append(targets, target{name: "attached", binary: kc, args: []string{pid}, attached: true})
	}
	if len(targets) == 0 {
		return errors.New("nothing to measure: give --target")
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
	fmt.Fprintf(stdout, "# Control plane memory, %d pods at concurrency %d, settled after %s; %s; %s\n\n",
		*pods, *conc, *settle, bench.DescribeMachine(), time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintln(stdout, "| server | load s | creates/s | peak RSS | RSS loaded | RSS settled (anon + file) | live heap | heap in use | heap idle (released) | next GC | Go sys | LIST p50 / p99 ms | RSS after LISTs | load avg at end |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, tg := range targets {
		fmt.Fprintf(stderr, "measuring %s ...\n", tg.name)
		opts := bench.MemoryOptions{Pods: *pods, Namespace: "membench", Concurrency: *conc, Settle: *settle, Lists: *lists,
			Progress: func(s string) { fmt.Fprintf(stderr, "  %s: %s\n", tg.name, s) }}
		if *profiles != "" {
			opts.HeapProfile = filepath.Join(*profiles, tg.name+".heap.pb.gz")
		}
		r, err := measure(ctx, tg, opts, logOut)
		if err != nil {
			return fmt.Errorf("%s: %w", tg.name, err)
		}
		fmt.Fprintln(stdout, row(r, *pods))
	}
	return nil
}

func measure(ctx context.Context, tg target, opts bench.MemoryOptions, logOut io.Writer) (bench.MemoryResult, error) {
	if tg.attached {
		pid, err := strconv.Atoi(tg.args[0])
		if err != nil {
			return bench.MemoryResult{}, fmt.Errorf("--attach pid: %w", err)
		}
		cfg, err := bench.AdminConfig(tg.binary)
		if err != nil {
			return bench.MemoryResult{}, err
		}
		return bench.RunMemory(ctx, bench.ListTarget{Name: tg.name, Config: cfg, PIDs: []int{pid}, APIServerPID: pid}, opts)
	}
	srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: tg.binary, Log: logOut, ExtraArgs: tg.args, Env: tg.env})
	if err != nil {
		return bench.MemoryResult{}, err
	}
	defer srv.Stop()
	cfg, err := srv.RESTConfig()
	if err != nil {
		return bench.MemoryResult{}, err
	}
	return bench.RunMemory(ctx, bench.ListTarget{Name: tg.name, Config: cfg, PIDs: []int{srv.PID()}, APIServerPID: srv.PID()}, opts)
}

func mib(b int64) string { return fmt.Sprintf("%d", b>>20) }

func row(r bench.MemoryResult, pods int) string {
	g := r.GoSettled
	return fmt.Sprintf("| %s | %.0f | %.0f | %s | %s | %s (%s + %s) | %s | %s | %s (%s) | %s | %s | %.0f / %.0f | %s | %s |",
		r.Target, r.LoadTime.Seconds(), float64(pods)/r.LoadTime.Seconds(), mib(r.PeakRSS), mib(r.Loaded.VmRSS),
		mib(r.Settled.VmRSS), mib(r.Settled.RssAnon), mib(r.Settled.RssFile), mib(r.LiveHeap), mib(g.HeapInuse), mib(g.HeapIdle), mib(g.HeapReleased),
		mib(g.NextGC), mib(g.Sys), float64(r.ListP50)/float64(time.Millisecond), float64(r.ListP99)/float64(time.Millisecond),
		mib(r.AfterLists.VmRSS), r.LoadAvgEnd)
}
