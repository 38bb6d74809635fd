package e2e

import (
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"
)

// TestIngressOnJoinedWorker: a worker joined with a token (in a network namespace of its own)
// serves Ingresses on its address, ports 80 and 443 by default, as the control plane's worker
// does. Its data plane reads TLS Secrets cluster-wide, which the node's identity may not: the
// node asks for a client certificate of system:skiff:ingress:<node>, which the approver grants it
// for itself. curl with --resolve to the worker reaches the pods over HTTP and HTTPS with the
// Secret's certificate, and the Ingress's status names the worker.
func TestIngressOnJoinedWorker(t *testing.T) {
	n := newTestNet(t)
	c := newJoinCluster(t, n, false)
	token := c.createToken()
	h := n.addHost()
	w := newJoinedNode(t, h, "worker-1", c.ServerURL(n))
	w.start(token)
	t.Cleanup(w.stop)
	t.Cleanup(func() {
		_, _ = c.kubectlErr("delete", "deployment", "--all", "--timeout=30s")
		_, _ = c.kubectlErr("delete", "pods", "--all", "--grace-period=1", "--timeout=60s")
	})
	w.readyWithBusybox(c)
	c.stdin(strings.ReplaceAll(ingressManifest, "APP", "a"), "apply", "-f", "-")
	eventually(t, 180*time.Second, func() error {
		out, err := c.kubectlErr("wait", "--for=condition=Ready", "pod", "-l", "app=a", "--timeout=2s")
		if err != nil || strings.Count(out, "condition met") < 2 {
			return errString(out)
		}
		return nil
	})

	dir := t.TempDir()
	ca := newIngressCA(t)
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	crt, key := ca.issue(t, dir, "web", 2001, "a.test")
	c.kubectl("create", "secret", "tls", "web-tls", "--cert", crt, "--key", key)
	c.kubectl("create", "ingress", "web", "--rule=a.test/*=a:80,tls=web-tls")

	for _, target := range []struct {
		scheme string
		port   int
	}{{"http", 80}, {"https", 443}} {
		eventually(t, 60*time.Second, func() error {
			out, errOut, err := curlIngress(target.scheme, "a.test", target.port, h.IP, caFile)
			if err != nil || !strings.Contains(out, "app-a") {
				return fmt.Errorf("%s to the worker: %v %q\n%s\nworker-1:\n%s", target.scheme, err, out, errOut, tail(w.log(), 30))
			}
			if target.scheme == "https" && !strings.Contains(errOut, "subject: CN=a.test") {
				return fmt.Errorf("https: not the Secret's certificate:\n%s", errOut)
			}
			return nil
		})
	}
	eventually(t, 60*time.Second, func() error {
		out := c.kubectl("get", "ingress", "web", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}")
		if !strings.Contains(out, h.IP) {
			return fmt.Errorf("ingress status %q does not name the worker %s", out, h.IP)
		}
		return nil
	})

	// The data plane's identity: its own certificate, for this node alone.
	data, err := os.ReadFile(filepath.Join(w.dataDir, "pki", "ingress-client.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertificate(data)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:skiff:ingress:worker-1" || strings.Join(cert.Subject.Organization, ",") != "system:skiff:ingresses" {
		t.Errorf("data plane certificate subject %q, want system:skiff:ingress:worker-1 in system:skiff:ingresses", cert.Subject)
	}
	mustContain(t, c.kubectl("get", "csr", "-o", `jsonpath={range .items[*]}{.spec.signerName} {.spec.username} {.status.conditions[0].type}{"\n"}{end}`),
		"kubernetes.io/kube-apiserver-client system:node:worker-1 Approved")
}

func tail(s string, lines int) string {
	all := strings.Split(s, "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
