// Command nettool is a tiny static helper the e2e tests run inside busybox pods (mounted by
// hostPath), for what busybox cannot do: a UDP server and client, and an in-cluster client-go
// call to the API server.
//
//	nettool udp-echo PORT           answer every datagram with "<hostname> <datagram>"
//	nettool udp ADDR:PORT MSG       send MSG, print the answer (3 s timeout)
//	nettool version                 GET /version with client-go's in-cluster config
//	nettool http-whoami PORT        answer every HTTP request with "<hostname> <client IP>"
//	nettool tls-rsa URL             GET URL offering only RSA cipher suites (TLS 1.2), without
//	                                verifying the certificate, as busybox wget's built-in TLS in an
//	                                older image does; print "key=<served key> status=<code>", body
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

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
		return fmt.Errorf("usage: nettool udp-echo PORT | udp ADDR:PORT MSG | version | http-whoami PORT | tls-rsa URL")
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
