package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestCertificateRenewalUnderTraffic: a control plane whose every leaf certificate lives 60 s
// (the hidden --leaf-certificate-lifetime) and a joined worker run for 3 minutes (10 with
// SKIFF_E2E_LONG=1) under continuous traffic: a request every 100 ms through the node-local
// balancer, each on a new connection (so each handshake checks the certificates of the moment:
// the API server's serving pair, the admin client pair from the kubeconfig the node rewrites), a
// watch held open, and logs and exec of a pod on the worker through its kubelet every 2 s
// (the API server's kubelet client certificate). Every request must succeed, the served and
// presented serial numbers must change several times, and `skiff certificate rotate` must
// change the served certificate at once.
func TestCertificateRenewalUnderTraffic(t *testing.T) {
	run := 3 * time.Minute
	if os.Getenv("SKIFF_E2E_LONG") == "1" {
		run = 10 * time.Minute
	}
	n := newTestNet(t)
	c := newJoinCluster(t, n, true, "--leaf-certificate-lifetime", "60s")
	token := c.createToken()
	w := newJoinedNode(t, n.addHost(), "worker-1", c.ServerURL(n))
	w.start(token)
	t.Cleanup(w.stop)
	w.readyWithBusybox(c)
	c.kubectl("run", "ticker", "--image=localhost/busybox:local", "--overrides", `{"spec":{"nodeName":"worker-1"}}`, "--",
		"sh", "-c", "while true; do echo tick; sleep 1; done")
	t.Cleanup(func() { _, _ = c.kubectlErr("delete", "pod", "ticker", "--grace-period=1", "--timeout=30s") })
	eventually(t, 120*time.Second, func() error {
		if out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod/ticker", "--timeout=2s"); err != nil {
			return errString(out)
		}
		return nil
	})
	// The first renewal pass shortened every year-long leaf at the node's start.
	check, err := execOutput(skiffBinary, "certificate", "check", "--data-dir", c.dataDir)
	if err != nil {
		t.Fatalf("certificate check: %v\n%s", err, check)
	}
	mustContain(t, check, "apiserver ", "etcd/peer", "front-proxy-client", "admin")
	t.Logf("certificates:\n%s", check)

	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var (
		mu                          sync.Mutex
		requests, failed            int
		failures                    []string
		served, presented           = map[string]bool{}, map[string]bool{}
		kubeletCalls, watchRestarts int
	)
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed++
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf("%s %s: %v", time.Now().Format(time.TimeOnly), what, err))
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { // a request every 100 ms, each on a new TLS connection
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			serial, client, err := freshRequest(ctx, c.kubeconfig)
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			requests++
			if err == nil {
				served[serial], presented[client] = true, true
			}
			mu.Unlock()
			if err != nil {
				fail("request", err)
			}
		}
	})
	wg.Go(func() { // a watch held open; it may end (the server's timeout) but never fail
		for ctx.Err() == nil {
			err := watchPods(ctx, c.kubeconfig)
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			watchRestarts++
			mu.Unlock()
			if err != nil {
				fail("watch", err)
			}
		}
	})
	wg.Go(func() { // logs and exec through the worker's kubelet
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if out, err := c.kubectlErr("logs", "ticker", "--tail=1"); err != nil || !strings.Contains(out, "tick") {
				if ctx.Err() == nil {
					fail("logs", fmt.Errorf("%v: %s", err, out))
				}
			}
			if out, err := c.kubectlErr("exec", "ticker", "--", "echo", "exec-ok"); err != nil || !strings.Contains(out, "exec-ok") {
				if ctx.Err() == nil {
					fail("exec", fmt.Errorf("%v: %s", err, out))
				}
			}
			mu.Lock()
			kubeletCalls++
			mu.Unlock()
		}
	})
	// Half-way, a rotation by hand: the served certificate changes at once.
	time.Sleep(run / 2)
	before, _, err := freshRequest(ctx, c.kubeconfig)
	if err != nil {
		t.Fatalf("request before the rotation: %v", err)
	}
	rotated, err := execOutput(skiffBinary, "certificate", "rotate", "--data-dir", c.dataDir, "--service", "apiserver")
	if err != nil {
		t.Fatalf("certificate rotate: %v\n%s", err, rotated)
	}
	mustContain(t, rotated, "apiserver ", "apiserver-rsa")
	after, _, err := freshRequest(ctx, c.kubeconfig)
	if err != nil || after == before || !strings.Contains(rotated, after) {
		t.Fatalf("after skiff certificate rotate the server presents %s (before %s, err %v):\n%s", after, before, err, rotated)
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%s: %d requests (%d failed), %d logs+exec rounds, %d watch restarts, %d serving serials, %d client serials",
		run, requests, failed, kubeletCalls, watchRestarts, len(served), len(presented))
	if failed > 0 {
		t.Fatalf("%d failed requests:\n%s\n%s", failed, strings.Join(failures, "\n"), c.log())
	}
	// 60 s leaves renewed at 40 s: at least one renewal per minute beside the rotation.
	if want := int(run/time.Minute) + 1; len(served) < want || len(presented) < want {
		t.Fatalf("served serials %d, client serials %d over %s; want at least %d of each", len(served), len(presented), run, want)
	}
	// The whole log: its tail (c.log) can be all etcd warnings and stream errors by now.
	if !strings.Contains(c.logAll(), "certificate renewed") {
		t.Fatalf("no renewal logged:\n%s", c.log())
	}
}

// freshRequest lists namespaces on a new connection with the kubeconfig as it is now on disk,
// and returns the serial numbers of the server's certificate and of the client's.
func freshRequest(ctx context.Context, kubeconfig string) (serverSerial, clientSerial string, err error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", "", err
	}
	pair, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return "", "", err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return "", "", err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.CAData)
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: cfg.TLSClientConfig.ServerName, MinVersion: tls.VersionTLS12,
	}}
	defer tr.CloseIdleConnections()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, cfg.Host+"/api/v1/namespaces?limit=1", nil)
	if err != nil {
		return "", "", err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("GET namespaces: %s", resp.Status)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.Text(16), leaf.SerialNumber.Text(16), nil
}

// watchPods holds a watch of pods until ctx ends or the server ends it; an error event or a
// failure to start is an error.
func watchPods(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	wi, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if ev.Type == "ERROR" {
			return fmt.Errorf("watch error event: %v", ev.Object)
		}
	}
	return nil
}
