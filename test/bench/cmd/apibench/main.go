// Command apibench starts a skiff server (the built binary, on free loopback ports with a temporary
// data dir) and measures it through HTTPS with client-go: ConfigMap creates at several concurrencies,
// then watch fan-out from one writer to many watchers. It prints the machine and a table of figures.
//
//	go build -o bin/skiff ./cmd/skiff && go run ./test/bench/cmd/apibench --skiff bin/skiff
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
	defer srv.Stop()
	cfg, err := srv.RESTConfig()
	if err != nil {
		return err
	}

	report := bench.Report{Machine: bench.DescribeMachine(), Label: o.label, Started: time.Now()}
	if !o.skipCreates {
		for _, enc := range o.encodings {
			for _, c := range o.concurrencies {
				fmt.Fprintf(stderr, "creates: %s, concurrency %d, %s ...\n", enc, c, o.createDuration)
				res, err := bench.RunCreates(ctx, cfg, bench.CreateOptions{
					Concurrency: c, Duration: o.createDuration, ContentType: contentType(enc),
					Namespace: "bench-creates", PayloadBytes: o.payload, NamePrefix: fmt.Sprintf("%s-c%d", enc, c),
					ServerCPU: srv.CPUTime,
				})
				if err != nil {
					return err
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
		res, err := bench.RunFanout(ctx, cfg, bench.FanoutOptions{
			Watchers: o.watchers, Duration: o.fanoutDuration, ContentType: contentType(enc), Rate: rate,
			Namespace: fmt.Sprintf("bench-fanout-%d", i), PayloadBytes: o.payload, SharedConnection: o.sharedConn,
			DrainTimeout: o.drainTimeout, ServerCPU: srv.CPUTime,
		})
		if err != nil {
			return err
		}
		report.Fanout = append(report.Fanout, res)
	}
	report.Write(stdout)
	return nil
}

func contentType(encoding string) string {
	if encoding == "protobuf" {
		return bench.ContentTypeProtobuf
	}
	return ""
}
