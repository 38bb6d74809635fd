package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"
)

// TestFrontProxyCARotation: `skiff certificate rotate-ca --ca front-proxy` replaces the CA that
// extension API servers trust for the API server's requests while an extension API server is
// asked every 100 ms. The server follows kube-system/extension-apiserver-authentication (polled
// every second, as real ones watch it); the phases are run one after another as an operator
// would, each once the ConfigMap carries it. No request fails, and at the end the ConfigMap and
// the API server's proxy client certificate know only the new CA.
func TestFrontProxyCARotation(t *testing.T) {
	c := newCluster(t)
	requestHeaderCA := func() (string, error) {
		out, err := c.kubectlErr("get", "configmap", "-n", "kube-system", "extension-apiserver-authentication", "-o", "json")
		if err != nil {
			return "", fmt.Errorf("%v: %s", err, out)
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := json.Unmarshal([]byte(out), &cm); err != nil {
			return "", err
		}
		return cm.Data["requestheader-client-ca-file"], nil
	}
	first, err := requestHeaderCA()
	if err != nil {
		t.Fatal(err)
	}
	var trusted atomic.Pointer[string]
	trusted.Store(&first)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() { // the extension server's view of the ConfigMap
		defer wg.Done()
		for ctx.Err() == nil {
			if ca, err := requestHeaderCA(); err == nil && ca != "" {
				trusted.Store(&ca)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	hosts := newHostPair(t)
	port, wardleCA := wardleServer(t, hosts.a, func() []byte { return []byte(*trusted.Load()) }, []string{pki.FrontProxyClientName})
	c.stdin(wardleManifest(port, hosts.a, wardleCA), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() error {
		if out, err := c.kubectlErr("get", "flunders", "-n", "wardle"); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})

	var requests, failed atomic.Int64
	var failuresMu sync.Mutex
	var failures []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			out, err := c.kubectlErr("get", "--raw", "/apis/wardle.example.com/v1/namespaces/wardle/flunders")
			requests.Add(1)
			if err != nil || !strings.Contains(out, "flunder-for-kubernetes-admin") {
				failed.Add(1)
				failuresMu.Lock()
				if len(failures) < 5 {
					failures = append(failures, fmt.Sprintf("%s: %v: %s", time.Now().Format("15:04:05.000"), err, strings.TrimSpace(out)))
				}
				failuresMu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	bundle := func() []string {
		certs, err := pki.ParseCertificates([]byte(*trusted.Load()))
		if err != nil {
			return nil
		}
		var out []string
		for _, c := range certs {
			out = append(out, c.Subject.CommonName)
		}
		return out
	}
	for _, step := range []struct {
		phase string
		cas   int
	}{{"trust", 2}, {"sign", 2}, {"retire", 1}} {
		out, err := execOutput(skiffBinary, "certificate", "rotate-ca", "--data-dir", c.dataDir, "--ca", "front-proxy", "--phase", step.phase)
		if err != nil {
			t.Fatalf("rotate-ca --ca front-proxy --phase %s: %v\n%s", step.phase, err, out)
		}
		t.Logf("rotate-ca --ca front-proxy --phase %s:\n%s", step.phase, out)
		file := readFile(t, filepath.Join(c.dataDir, "pki", "front-proxy-ca.crt"))
		// The extension server takes the phase from the ConfigMap before the next one runs.
		eventually(t, 30*time.Second, func() error {
			if got := *trusted.Load(); got != file {
				return fmt.Errorf("after %s the extension server trusts %v, the node's file has %d CAs", step.phase, bundle(), strings.Count(file, "BEGIN CERTIFICATE"))
			}
			return nil
		})
		if got := len(bundle()); got != step.cas {
			t.Fatalf("after %s the requestheader CA bundle holds %d CAs, want %d", step.phase, got, step.cas)
		}
		time.Sleep(3 * time.Second)
	}
	cancel()
	wg.Wait()
	t.Logf("figure: %d requests to the extension API server across the front-proxy CA rotation, %d failed", requests.Load(), failed.Load())
	if failed.Load() > 0 || requests.Load() == 0 {
		t.Errorf("%d of %d requests failed:\n%s", failed.Load(), requests.Load(), strings.Join(failures, "\n"))
	}
	newCA := firstCA(t, filepath.Join(c.dataDir, "pki", "front-proxy-ca.crt"))
	client, err := pki.ParseCertificate([]byte(readFile(t, filepath.Join(c.dataDir, "pki", "front-proxy-client.crt"))))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CheckSignatureFrom(newCA); err != nil {
		t.Errorf("the API server's proxy client certificate is not signed by the new front-proxy CA: %v", err)
	}
}
