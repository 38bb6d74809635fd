// Command nettool is a tiny static helper the e2e tests run inside busybox pods (mounted by
// hostPath), for what busybox cannot do: a UDP server and client, and an in-cluster client-go
// call to the API server.
//
//	nettool udp-echo PORT           answer every datagram with "<hostname> <datagram>"
//	nettool udp ADDR:PORT MSG       send MSG, print the answer (3 s timeout)
//	nettool version                 GET /version with client-go's in-cluster config
//	nettool http-whoami PORT        answer every HTTP request with "<hostname> <client IP>"
//	nettool serve tcp:PORT|udp:PORT ...
//	                                http-whoami on every tcp PORT, and on every udp PORT answer each
//	                                datagram with "<hostname> <client IP>" too
//	nettool probe tcp:HOST:PORT|udp:HOST:PORT ...
//	                                try every target at once and print one line per target, in order:
//	                                "<target> accepted <answer>", "<target> refused" (a reset or an
//	                                ICMP unreachable: the packet reached the host), "<target> timeout"
//	                                (no answer at all in 3 s: dropped), "<target> unanswered" (TCP
//	                                connected, no HTTP answer) or "<target> error <why>" (HOST did not
//	                                resolve, for one)
//	nettool tls-rsa URL             GET URL offering only RSA cipher suites (TLS 1.2), without
//	                                verifying the certificate, as busybox wget's built-in TLS in an
//	                                older image does; print "key=<served key> status=<code>", body
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/pki/pkitest"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "nettool:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: nettool udp-echo PORT | udp ADDR:PORT MSG | version | http-whoami PORT | serve SPEC... | probe TARGET... | tls-rsa URL")
	}
	switch args[0] {
	case "udp-echo":
		conn, err := net.ListenPacket("udp4", ":"+args[1])
		if err != nil {
			return err
		}
		host, _ := os.Hostname()
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return err
			}
			_, _ = conn.WriteTo([]byte(host+" "+string(buf[:n])), from)
		}
	case "udp":
		conn, err := net.Dial("udp4", args[1])
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.Write([]byte(args[2])); err != nil {
			return err
		}
		_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 2048)
		n, err := conn.Read(buf)
		if err != nil {
			return err
		}
		fmt.Println(string(buf[:n]))
		return nil
	case "http-whoami":
		host, _ := os.Hostname()
		srv := &http.Server{Addr: ":" + args[1], ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ip, _, _ := net.SplitHostPort(r.RemoteAddr)
			fmt.Fprintf(w, "%s %s\n", host, ip)
		})}
		return srv.ListenAndServe()
	case "serve":
		return serve(args[1:])
	case "probe":
		probe(args[1:])
		return nil
	case "tls-rsa":
		return getRSAOnly(args[1])
	case "version":
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return err
		}
		cfg.Timeout = 10 * time.Second
		client, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return err
		}
		v, err := client.ServerVersion()
		if err != nil {
			return err
		}
		fmt.Printf("host=%s gitVersion=%s\n", cfg.Host, v.GitVersion)
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// getRSAOnly is `nettool tls-rsa URL`.
func getRSAOnly(url string) error {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: pkitest.RSAOnlyClient(nil, "")}}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	key := "none"
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		key = resp.TLS.PeerCertificates[0].PublicKeyAlgorithm.String()
	}
	fmt.Printf("key=%s status=%d\n%s\n", key, resp.StatusCode, body)
	return nil
}

// serve is `nettool serve SPEC...`: it returns when one of the servers fails.
func serve(specs []string) error {
	host, _ := os.Hostname()
	var g errgroup.Group
	for _, spec := range specs {
		proto, port, ok := strings.Cut(spec, ":")
		switch {
		case ok && proto == "tcp":
			srv := &http.Server{Addr: ":" + port, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ip, _, _ := net.SplitHostPort(r.RemoteAddr)
				fmt.Fprintf(w, "%s %s\n", host, ip)
			})}
			g.Go(srv.ListenAndServe)
		case ok && proto == "udp":
			conn, err := net.ListenPacket("udp4", ":"+port)
			if err != nil {
				return err
			}
			g.Go(func() error { return whoamiUDP(conn, host) })
		default:
			return fmt.Errorf("serve: %q is neither tcp:PORT nor udp:PORT", spec)
		}
	}
	return g.Wait()
}

// whoamiUDP answers every datagram on conn with "<host> <client IP>".
func whoamiUDP(conn net.PacketConn, host string) error {
	buf := make([]byte, 2048)
	for {
		_, from, err := conn.ReadFrom(buf)
		if err != nil {
			return err
		}
		ip, _, _ := net.SplitHostPort(from.String())
		_, _ = conn.WriteTo([]byte(host+" "+ip+"\n"), from)
	}
}

// probeTimeout is how long a probe waits for a connection or an answer. A dropped TCP SYN is
// sent again after 1 s, so an accepted connection on a loaded node still fits.
const probeTimeout = 3 * time.Second

// probe is `nettool probe TARGET...`: all targets at once (a dropped one costs probeTimeout,
// not probeTimeout per target), the results printed in the order given.
func probe(targets []string) {
	results := make([]string, len(targets))
	var g errgroup.Group
	for i, target := range targets {
		g.Go(func() error {
			results[i] = probeOne(target)
			return nil
		})
	}
	_ = g.Wait()
	for i, target := range targets {
		fmt.Println(target + " " + results[i])
	}
}

// probeOne classifies one connection attempt: see the command's doc.
func probeOne(target string) string {
	proto, hostPort, ok := strings.Cut(target, ":")
	host, port, err := net.SplitHostPort(hostPort)
	if !ok || err != nil || (proto != "tcp" && proto != "udp") {
		return "error target is not tcp:HOST:PORT or udp:HOST:PORT"
	}
	// The name is resolved before the clock of the connection starts, so a slow lookup is
	// never read as a dropped connection.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return fmt.Sprintf("error lookup %s: %v", host, err)
	}
	addr := net.JoinHostPort(addrs[0], port)
	if proto == "udp" {
		return probeUDP(addr)
	}
	return probeTCP(addr)
}

func probeTCP(addr string) string {
	conn, err := net.DialTimeout("tcp4", addr, probeTimeout)
	if err != nil {
		return classify(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := conn.Write([]byte("GET / HTTP/1.0\r\nHost: probe\r\n\r\n")); err != nil {
		return "unanswered " + err.Error()
	}
	resp, err := io.ReadAll(conn)
	_, body, found := strings.Cut(string(resp), "\r\n\r\n")
	if !found {
		return fmt.Sprintf("unanswered %q %v", resp, err)
	}
	return "accepted " + strings.TrimSpace(body)
}

func probeUDP(addr string) string {
	conn, err := net.Dial("udp4", addr)
	if err != nil {
		return classify(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := conn.Write([]byte("probe")); err != nil {
		return classify(err)
	}
	buf := make([]byte, 2048)
	n, err := conn.Read(buf)
	if err != nil {
		return classify(err)
	}
	return "accepted " + strings.TrimSpace(string(buf[:n]))
}

// classify names a failed connection: refused (a TCP reset, or an ICMP port unreachable for
// UDP) means the packet reached the destination; a timeout means nothing came back.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "error " + err.Error()
}
