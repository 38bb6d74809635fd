// Command apibench starts a skiff server (the built binary, on free loopback ports with a temporary
// data dir) and measures it through HTTPS with client-go: ConfigMap creates at several concurrencies,
// then watch fan-out from one writer to many watchers. It prints the machine and a table of figures.
// With --upstream it then measures an upstream kube-apiserver on its own etcd the same way, in the
// same run, for figures side by side.
//
//	go build -o bin/skiff ./cmd/skiff && go run ./test/bench/cmd/apibench --skiff bin/skiff
//	go run ./test/bench/cmd/apibench --skiff bin/skiff --upstream ~/.cache/skiff-upstream/bin
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/test/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "apibench:", err)
		}
		os.Exit(1)
	}
}

type options struct {
	binary         string
	label          string
	concurrencies  []int
	createDuration time.Duration
	encodings      []string
	watchers       int
	fanoutDuration time.Duration
	fanoutRates    []float64
	drainTimeout   time.Duration
	sharedConn     bool
	payload        int
	serverLog      string
	skipCreates    bool
	skipFanout     bool
	// upstream is the directory of an upstream kube-apiserver to measure after skiff (empty: none),
	// on etcd (Debian's by default).
	upstream, etcd string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("apibench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.binary, "skiff", "", "skiff binary to benchmark (default: go build ./cmd/skiff into a temporary directory)")
	fs.StringVar(&o.label, "label", "", "a note printed with the figures (e.g. which build this is)")
	conc := fs.String("concurrency", "1,16,64", "comma-separated create concurrencies")
	fs.DurationVar(&o.createDuration, "create-duration", 6*time.Second, "how long each create measurement runs")
	enc := fs.String("encodings", "json,protobuf", "comma-separated client encodings: json, protobuf")
	fs.IntVar(&o.watchers, "watchers", 100, "watchers in the fan-out measurement")
	fs.DurationVar(&o.fanoutDuration, "fanout-duration", 10*time.Second, "how long the fan-out writer writes")
	rates := fs.String("fanout-rates", "0,100", "comma-separated fan-out writer rates in writes/s, one measurement each; 0 writes as fast as writes are acknowledged")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", 30*time.Second, "how long to wait for watchers after the last write")
	fs.BoolVar(&o.sharedConn, "shared-connection", false, "multiplex all watches over one HTTP/2 connection instead of one connection per watcher")
	fs.IntVar(&o.payload, "payload", 1024, "bytes of data in each ConfigMap")
	fs.StringVar(&o.serverLog, "server-log", "", "file for the server's log (default: discarded)")
	fs.BoolVar(&o.skipCreates, "skip-creates", false, "skip the create measurements")
	fs.BoolVar(&o.skipFanout, "skip-fanout", false, "skip the watch fan-out measurement")
	fs.StringVar(&o.upstream, "upstream", "", "directory holding an upstream kube-apiserver (hack/conformance/build-components.sh builds v1.33.13 into ~/.cache/skiff-upstream/bin) to measure after skiff, on its own etcd, in the same run")
	fs.StringVar(&o.etcd, "etcd", "/usr/bin/etcd", "the etcd binary under the upstream kube-apiserver")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, part := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return o, fmt.Errorf("--concurrency: %q is not a positive integer", part)
		}
		o.concurrencies = append(o.concurrencies, n)
	}
	for _, part := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || r < 0 {
			return o, fmt.Errorf("--fanout-rates: %q is not a rate", part)
		}
		o.fanoutRates = append(o.fanoutRates, r)
	}
	for _, part := range strings.Split(*enc, ",") {
		switch e := strings.TrimSpace(part); e {
		case "json", "protobuf":
			o.encodings = append(o.encodings, e)
		default:
			return o, fmt.Errorf("--encodings: unknown encoding %q", e)
		}
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
	var serverLog io.Writer
	if o.serverLog != "" {
		f, err := os.Create(o.serverLog)
		if err != nil {
			return err
		}
		defer f.Close()
		serverLog = f
	}
	fmt.Fprintln(stderr, "starting", o.binary, "...")
	srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: o.binary, Log: serverLog})
	if err != nil {
		return err
	}
	cfg, err := srv.RESTConfig()
	if err != nil {
		srv.Stop()
		return err
	}
	report, err := measure(ctx, o, target{label: o.label, config: cfg, cpu: srv.CPUTime}, stderr)
	srv.Stop()
	if err != nil {
		return err
	}
	report.Write(stdout)
	if o.upstream == "" {
		return nil
	}
	fmt.Fprintln(stderr, "starting the upstream kube-apiserver in", o.upstream, "...")
	up, err := bench.StartUpstream(ctx, bench.UpstreamOptions{Dir: o.upstream, Etcd: o.etcd, Log: serverLog})
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	defer up.Stop()
	// Both processes count: skiff's CPU includes its embedded etcd.
	upCPU := func() (time.Duration, error) {
		var total time.Duration
		for _, pid := range []int{up.APIServerPID(), up.EtcdPID()} {
			d, err := bench.ProcessCPU(pid)
			if err != nil {
				return 0, err
			}
			total += d
		}
		return total, nil
	}
	report, err = measure(ctx, o, target{label: "upstream kube-apiserver and etcd (" + o.upstream + ")", config: up.Config, cpu: upCPU}, stderr)
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	fmt.Fprintln(stdout)
	report.Write(stdout)
	return nil
}

// target is one API server to measure: how to reach it and read its CPU time.
type target struct {
	label  string
	config *rest.Config
	cpu    func() (time.Duration, error)
}

// measure runs the create and fan-out measurements o asks for against t.
func measure(ctx context.Context, o options, t target, stderr io.Writer) (bench.Report, error) {
	report := bench.Report{Machine: bench.DescribeMachine(), Label: t.label, Started: time.Now()}
	if !o.skipCreates {
		for _, enc := range o.encodings {
			for _, c := range o.concurrencies {
				fmt.Fprintf(stderr, "creates: %s, concurrency %d, %s ...\n", enc, c, o.createDuration)
				res, err := bench.RunCreates(ctx, t.config, bench.CreateOptions{
					Concurrency: c, Duration: o.createDuration, ContentType: contentType(enc),
					Namespace: "bench-creates", PayloadBytes: o.payload, NamePrefix: fmt.Sprintf("%s-c%d", enc, c),
					ServerCPU: t.cpu,
				})
				if err != nil {
					return report, err
				}
				report.Creates = append(report.Creates, res)
			}
		}
	}
	for i, rate := range o.fanoutRates {
		if o.skipFanout || o.watchers == 0 {
			break
		}
		enc := o.encodings[0]
		fmt.Fprintf(stderr, "fan-out: %s, %d watchers, writer at %v/s (0: closed loop) for %s ...\n", enc, o.watchers, rate, o.fanoutDuration)
		res, err := bench.RunFanout(ctx, t.config, bench.FanoutOptions{
			Watchers: o.watchers, Duration: o.fanoutDuration, ContentType: contentType(enc), Rate: rate,
			Namespace: fmt.Sprintf("bench-fanout-%d", i), PayloadBytes: o.payload, SharedConnection: o.sharedConn,
			DrainTimeout: o.drainTimeout, ServerCPU: t.cpu,
		})
		if err != nil {
			return report, err
		}
		report.Fanout = append(report.Fanout, res)
	}
	return report, nil
}

func contentType(encoding string) string {
	if encoding == "protobuf" {
		return bench.ContentTypeProtobuf
	}
	return ""
}
