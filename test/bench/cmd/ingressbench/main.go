// Command ingressbench measures skiff's built-in HTTP data plane (the Ingress `skiff` serves)
// beside Debian's nginx as a reverse proxy to the same pods on the same machine. It starts
// `skiff server` with every role, runs a static Go HTTP server (./echo, built here into a
// one-layer image) as a Deployment behind a Service and an Ingress with TLS, starts nginx with the
// same pods as its upstream (HTTP/1.1 with kept-alive upstream connections, as ingress-nginx
// configures it), and then, for each proxy, drives closed-loop requests over 1, 64 and 512
// connections for a fixed time:
//
//   - HTTP/1.1 in cleartext, and HTTP/2 over TLS (ALPN, SNI bench.local), one connection per
//     client, each sending its next request when the last one's body is read;
//   - requests/s, p50 and p99 latency, errors, and the proxy's CPU time per request: skiff's whole
//     process (its idle rate, measured before the runs, subtracted), nginx's master and workers.
//
// The load generator runs on the same two cores, for both proxies alike.
//
//	hack/ingressbench.sh        # fetches Debian's nginx package, builds skiff, runs this
//	go run ./test/bench/cmd/ingressbench --skiff bin/skiff --nginx /path/to/nginx
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/skiff-sh/skiff/test/bench"
)

// host is the name the Ingress and nginx serve.
const host = "bench.local"

type options struct {
	binary, nginx    string
	duration, warmup time.Duration
	conns            []int
	replicas         int
	keep             bool
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "ingressbench:", err)
		}
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("ingressbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var conns string
	fs.StringVar(&o.binary, "skiff", "bin/skiff", "the skiff binary")
	fs.StringVar(&o.nginx, "nginx", "", "Debian's nginx binary (hack/ingressbench.sh fetches the package); empty: skiff alone")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each measured run lasts")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before each proxy and protocol")
	fs.StringVar(&conns, "conns", "1,64,512", "concurrent connections, comma separated")
	fs.IntVar(&o.replicas, "replicas", 2, "backend pods")
	fs.BoolVar(&o.keep, "keep", false, "leave the work dir (skiff's log, nginx's config and log)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, c := range strings.Split(conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return o, fmt.Errorf("--conns %q: positive integers, comma separated", conns)
		}
		o.conns = append(o.conns, n)
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	work, err := os.MkdirTemp("", "ingressbench-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(work)
	} else {
		fmt.Fprintln(stderr, "work dir:", work)
	}
	env, err := startEnvironment(ctx, o, work, stderr)
	if env != nil {
		defer env.stop(stderr)
	}
	if err != nil {
		return err
	}
	targets := []target{env.skiff}
	if env.nginx != nil {
		targets = append(targets, *env.nginx)
	}
	var results []result
	for _, t := range targets {
		for _, proto := range []string{"h1", "h2"} {
			fmt.Fprintf(stderr, "%s %s: warm-up ...\n", t.name, proto)
			drive(ctx, t, proto, o.conns[len(o.conns)-1], o.warmup, env.roots)
			for _, n := range o.conns {
				r := drive(ctx, t, proto, n, o.duration, env.roots)
				fmt.Fprintf(stderr, "%s %s %d conns: %.0f req/s, p99 %s, %d errors\n", t.name, proto, n, r.perSecond(), r.p99, r.errors)
				results = append(results, r)
			}
		}
	}
	writeReport(stdout, bench.DescribeMachine(), o, env, results)
	return nil
}

// target is a proxy under test: its cleartext and TLS addresses and its CPU time so far.
type target struct {
	name              string
	httpAddr, tlsAddr string
	cpu               func() (time.Duration, error)
	// idlePerSecond is the CPU the proxy's process spends without requests (skiff's control plane).
	idlePerSecond time.Duration
}

// result is one measured run.
type result struct {
	target, proto    string
	conns            int
	requests, errors int
	elapsed          time.Duration
	p50, p99         time.Duration
	cpu              time.Duration
	firstErr         error
}

func (r result) perSecond() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// cpuPerRequest is the proxy's CPU time per request in microseconds.
func (r result) cpuPerRequest() string {
	if r.requests == 0 || r.cpu <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(r.cpu.Microseconds())/float64(r.requests))
}

// drive runs closed-loop requests over conns connections of proto for d and measures them.
func drive(ctx context.Context, t target, proto string, conns int, d time.Duration, roots *x509.CertPool) result {
	res := result{target: t.name, proto: proto, conns: conns}
	url := "http://" + t.httpAddr + "/"
	if proto == "h2" {
		url = "https://" + t.tlsAddr + "/"
	}
	clients := make([]*http.Client, conns)
	for i := range clients {
		tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}
		if proto == "h2" {
			tr.TLSClientConfig = &tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}
			tr.ForceAttemptHTTP2 = true
		}
		clients[i] = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	cpuBefore, _ := t.cpu()
	began := time.Now()
	deadline := began.Add(d)
	var mu sync.Mutex
	var latencies []time.Duration
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			errs := 0
			var firstErr error
			for time.Now().Before(deadline) && ctx.Err() == nil {
				start := time.Now()
				if err := request(ctx, c, url, proto); err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			res.errors += errs
			if res.firstErr == nil {
				res.firstErr = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(began)
	cpuAfter, _ := t.cpu()
	res.cpu = cpuAfter - cpuBefore - time.Duration(res.elapsed.Seconds()*float64(t.idlePerSecond))
	res.requests = len(latencies)
	res.p50, res.p99, _ = bench.Percentiles(latencies)
	return res
}

// request sends one GET for host and reads the whole answer, which must be a 200 over proto.
func request(ctx context.Context, c *http.Client, url, proto string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if want := map[string]int{"h1": 1, "h2": 2}[proto]; resp.ProtoMajor != want {
		return fmt.Errorf("answered over %s, not %s", resp.Proto, proto)
	}
	return nil
}

func writeReport(out io.Writer, m bench.Machine, o options, env *environment, results []result) {
	fmt.Fprintf(out, "machine: %s\n", m)
	fmt.Fprintf(out, "date: %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "backend: %d pods of a static Go HTTP/1.1 server; %s per run after %s of warm-up per proxy and protocol\n", o.replicas, o.duration, o.warmup)
	fmt.Fprintf(out, "skiff idle CPU (subtracted): %s per second\n", env.skiff.idlePerSecond.Round(time.Millisecond))
	if env.nginxVersion != "" {
		fmt.Fprintf(out, "nginx: %s, worker_processes %d, upstream keepalive %d\n", env.nginxVersion, nginxWorkers, nginxKeepalive)
	}
	fmt.Fprintln(out, "h1: HTTP/1.1 cleartext; h2: HTTP/2 over TLS (ECDSA P-256); one connection per client, closed loop")
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| proxy\t protocol\t connections\t requests\t requests/s\t p50 ms\t p99 ms\t errors\t proxy CPU µs/request\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t---\t")
	for _, r := range results {
		fmt.Fprintf(tw, "| %s\t %s\t %d\t %d\t %.0f\t %.2f\t %.2f\t %d\t %s\t\n", r.target, r.proto, r.conns, r.requests, r.perSecond(),
			float64(r.p50)/float64(time.Millisecond), float64(r.p99)/float64(time.Millisecond), r.errors, r.cpuPerRequest())
	}
	tw.Flush()
	for _, r := range results {
		if r.firstErr != nil {
			fmt.Fprintf(out, "  first error (%s %s, %d connections): %v\n", r.target, r.proto, r.conns, r.firstErr)
		}
	}
}

// selfSigned writes a certificate and key for host into dir and returns their paths and a pool
// that trusts the certificate.
func selfSigned(dir string) (certFile, keyFile string, roots *x509.CertPool, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return "", "", nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "", "", nil, err
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots, nil
}

// waitAnswers waits until a target answers a request over both protocols.
func waitAnswers(ctx context.Context, t target, roots *x509.CertPool, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		r1 := drive(ctx, t, "h1", 1, 100*time.Millisecond, roots)
		r2 := drive(ctx, t, "h2", 1, 100*time.Millisecond, roots)
		if r1.requests > 0 && r2.requests > 0 {
			return nil
		}
		last = errors.Join(r1.firstErr, r2.firstErr)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s does not answer within %s: %v", t.name, within, last)
}

// kubectl runs kubectl with the server's admin kubeconfig.
func kubectl(ctx context.Context, kubeconfig string, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// freeAddr is a loopback address with a free port.
func freeAddr() (string, error) {
	ports, err := bench.FreePorts(1)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), nil
}
