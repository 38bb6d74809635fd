package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ingressManifest: three Deployments whose busybox httpd answers "app-<name> <pod>", and their
// Services.
const ingressManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: APP
spec:
  replicas: 2
  selector:
    matchLabels: {app: APP}
  template:
    metadata:
      labels: {app: APP}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: localhost/busybox:local
        command: ["sh", "-c", "mkdir -p /www && echo app-APP $(hostname) > /www/index.html && exec httpd -f -p 8080 -h /www"]
        ports: [{containerPort: 8080, name: http}]
        readinessProbe:
          tcpSocket: {port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: APP
spec:
  selector: {app: APP}
  ports: [{name: http, port: 80, targetPort: http}]
`

// ingressCA is a test CA and the certificates it signs for the Ingress's hosts.
type ingressCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newIngressCA(t *testing.T) *ingressCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ingress test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ingressCA{cert: cert, key: key, pool: pool}
}

// issue writes a certificate for hosts with serial to dir/<name>.crt and .key.
func (ca *ingressCA) issue(t *testing.T, dir, name string, serial int64, hosts ...string) (crt, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	crt, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return crt, key
}

// curlIngress runs curl to host's URL resolved to addr, trusting only caFile, and returns the
// body; the serial of the certificate served is in the verbose output, which it returns too.
func curlIngress(scheme, host string, port int, addr, caFile string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := fmt.Sprintf("%s://%s:%d/", scheme, host, port)
	cmd := exec.CommandContext(ctx, "curl", "-sS", "--fail", "-v", "--noproxy", "*", "--max-time", "10",
		"--resolve", fmt.Sprintf("%s:%d:%s", host, port, addr), "--cacert", caFile, url)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// TestIngress is issue 29's Ingress as a user meets it on one `skiff server` node: two
// Deployments behind `kubectl create ingress` for two hosts with a TLS Secret from `kubectl create
// secret tls`; curl with --resolve to the node's address reaches each host's pods over HTTP and
// over HTTPS with the Secret's certificate (verified against the test CA); the Ingress's status
// names the node. Then, under requests made the whole time over both schemes, the Ingress is
// patched to a third Deployment and the Secret replaced by a new certificate: not one request
// fails, the new backend answers and new connections are served the new certificate.
func TestIngress(t *testing.T) {
	requireRuntime(t)
	addr := testHostAddress(t)
	httpPort, httpsPort := freePort(t), freePort(t)
	c := newWorkerCluster(t, "--bind-address", addr,
		"--ingress-http-port", strconv.Itoa(httpPort), "--ingress-https-port", strconv.Itoa(httpsPort))

	for _, app := range []string{"a", "b", "c"} {
		c.stdin(strings.ReplaceAll(ingressManifest, "APP", app), "apply", "-f", "-")
	}
	for _, app := range []string{"a", "b", "c"} {
		eventually(t, 180*time.Second, func() error {
			out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod", "-l", "app="+app, "--timeout=2s")
			if err != nil || strings.Count(out, "condition met") < 2 {
				return errString(out)
			}
			return nil
		})
	}
	eventually(t, 60*time.Second, func() error {
		out, err := c.kubectlErr("get", "ingressclass", "skiff", "-o", `jsonpath={.spec.controller} {.metadata.annotations.ingressclass\.kubernetes\.io/is-default-class}`)
		if err != nil || out != "skiff.sh/ingress true" {
			return fmt.Errorf("IngressClass skiff: %q %v", out, err)
		}
		return nil
	})

	dir := t.TempDir()
	ca := newIngressCA(t)
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	crt, key := ca.issue(t, dir, "web-1", 1001, "a.test", "b.test")
	c.kubectl("create", "secret", "tls", "web-tls", "--cert", crt, "--key", key)
	c.kubectl("create", "ingress", "web", "--rule=a.test/*=a:80,tls=web-tls", "--rule=b.test/*=b:80,tls=web-tls")

	// Each host reaches its own pods, over HTTP and HTTPS, with the Secret's certificate.
	for _, hc := range []struct{ host, app string }{{"a.test", "app-a "}, {"b.test", "app-b "}} {
		for _, scheme := range []string{"http", "https"} {
			port := map[string]int{"http": httpPort, "https": httpsPort}[scheme]
			eventually(t, 60*time.Second, func() error {
				body, verbose, err := curlIngress(scheme, hc.host, port, addr, caFile)
				if err != nil || !strings.HasPrefix(body, hc.app) {
					return fmt.Errorf("curl %s://%s: %q %v\n%s", scheme, hc.host, body, err, verbose)
				}
				if scheme == "https" && !strings.Contains(verbose, "subject: CN=a.test") {
					return fmt.Errorf("curl %s://%s was not served the Secret's certificate:\n%s", scheme, hc.host, verbose)
				}
				return nil
			})
		}
	}
	eventually(t, 60*time.Second, func() error {
		out, err := c.kubectlErr("get", "ingress", "web", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}")
		if err != nil || out != addr {
			return fmt.Errorf("status.loadBalancer %q, want %s: %v", out, addr, err)
		}
		return nil
	})

	// Requests the whole time: an HTTP/2 client over TLS and an HTTP/1.1 one in cleartext, each on
	// its kept-alive connection, and a client opening a new TLS connection for every request.
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(a)
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(addr, port))
	}
	// A config each: an HTTP/2 transport adds "h2" to its config's ALPN protocols.
	clients := map[string]*http.Client{
		"https-h2":  {Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{RootCAs: ca.pool}, ForceAttemptHTTP2: true}},
		"http":      {Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial}},
		"https-new": {Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{RootCAs: ca.pool}, DisableKeepAlives: true}},
	}
	urls := map[string]string{
		"https-h2":  fmt.Sprintf("https://a.test:%d/", httpsPort),
		"http":      fmt.Sprintf("http://a.test:%d/", httpPort),
		"https-new": fmt.Sprintf("https://b.test:%d/", httpsPort),
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	counts := map[string]int{}
	serials := map[string]bool{}
	bodies := map[string]bool{}
	for name, client := range clients {
		wg.Go(func() {
			for !stop.Load() {
				res, err := client.Get(urls[name])
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v", name, err))
					mu.Unlock()
					continue
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				mu.Lock()
				counts[name]++
				if err != nil || res.StatusCode != http.StatusOK {
					failures = append(failures, fmt.Sprintf("%s: %d %q %v", name, res.StatusCode, body, err))
				}
				if len(body) > 5 {
					bodies[name+" "+string(body[:5])] = true
				}
				if res.TLS != nil && len(res.TLS.PeerCertificates) > 0 {
					serials[name+" "+res.TLS.PeerCertificates[0].SerialNumber.String()] = true
				}
				mu.Unlock()
			}
		})
	}
	finish := func() {
		if !stop.Swap(true) {
			wg.Wait()
		}
	}
	defer finish()
	time.Sleep(2 * time.Second) // requests before the changes too

	// A route change: a.test goes to Deployment c.
	c.kubectl("patch", "ingress", "web", "--type=json", "-p", `[{"op":"replace","path":"/spec/rules/0/http/paths/0/backend/service/name","value":"c"}]`)
	eventually(t, 60*time.Second, func() error {
		body, verbose, err := curlIngress("http", "a.test", httpPort, addr, caFile)
		if err != nil || !strings.HasPrefix(body, "app-c ") {
			return fmt.Errorf("a.test after the patch: %q %v\n%s", body, err, verbose)
		}
		return nil
	})

	// A certificate rotation: the Secret replaced by a new certificate of the same hosts.
	crt2, key2 := ca.issue(t, dir, "web-2", 1002, "a.test", "b.test")
	yaml := c.kubectl("create", "secret", "tls", "web-tls", "--cert", crt2, "--key", key2, "--dry-run=client", "-o", "yaml")
	c.stdin(yaml, "apply", "-f", "-")
	eventually(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !serials["https-new 1002"] {
			return fmt.Errorf("no new connection was served the new certificate yet (seen %v; %d failed requests: %v)", serials, len(failures), failures[max(0, len(failures)-3):])
		}
		return nil
	})
	if body, verbose, err := curlIngress("https", "b.test", httpsPort, addr, caFile); err != nil || !strings.HasPrefix(body, "app-b ") {
		t.Fatalf("curl after the rotation: %q %v\n%s", body, err, verbose)
	}
	time.Sleep(2 * time.Second) // requests after the changes too
	finish()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("figure: requests during the route change and the certificate rotation: %v, failed %d; bodies %v; serials %v", counts, len(failures), bodies, serials)
	for _, f := range failures {
		t.Errorf("request failed: %s", f)
	}
	for name := range clients {
		if counts[name] == 0 {
			t.Errorf("client %s made no request", name)
		}
	}
	for _, want := range []string{"https-h2 app-a", "https-h2 app-c", "http app-a", "http app-c", "https-new 1001", "https-new 1002"} {
		if !bodies[want] && !serials[want] {
			t.Errorf("never saw %q (bodies %v, serials %v)", want, bodies, serials)
		}
	}
	mustContain(t, c.kubectl("get", "--raw", "/metrics"), "skiff_ingress_requests_total", "skiff_ingress_request_duration_seconds")
}
