package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/pki"
)

// TestUserKubeconfig: a kubeconfig for another identity carries a client certificate of that
// user and groups signed by the node's CA, and reaches the API server as the admin kubeconfig does.
func TestUserKubeconfig(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "pki"), "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{DataDir: dir, BindAddress: "127.0.0.1", WorkerConfig: WorkerConfig{LBPort: 16444}}
	admin, err := localKubeconfig(cfg, ca.CertPEM, []byte("admin-cert"), []byte("admin-key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteFileAtomic(cfg.AdminKubeconfigPath(), admin, 0o600); err != nil {
		t.Fatal(err)
	}

	data, err := UserKubeconfig(dir, "system:kube-scheduler", []string{"g1", "g2"}, now)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	cl, auth := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if cl.Server != cfg.LBURL() || cl.TLSServerName != lbServerName || string(cl.CertificateAuthorityData) != string(ca.CertPEM) {
		t.Errorf("cluster = %s (server name %q), want the admin kubeconfig's %s (%q) with the node's CA", cl.Server, cl.TLSServerName, cfg.LBURL(), lbServerName)
	}
	block, _ := pem.Decode(auth.ClientCertificateData)
	if block == nil {
		t.Fatal("no client certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:kube-scheduler" || !slices.Equal(cert.Subject.Organization, []string{"g1", "g2"}) {
		t.Errorf("subject = %v, want CN=system:kube-scheduler O=g1,g2", cert.Subject)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify against the node's CA: %v", err)
	}

	if _, err := UserKubeconfig(t.TempDir(), "u", nil, now); err == nil || !strings.Contains(err.Error(), "admin kubeconfig") {
		t.Errorf("data dir without a node: err = %v, want one naming the admin kubeconfig", err)
	}
	if _, err := UserKubeconfig(dir, "", nil, now); err == nil {
		t.Error("empty user: no error")
	}
}
