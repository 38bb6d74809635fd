package certificates

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/test/bench"
)

// env is one running skiff.
type env struct {
	client     kubernetes.Interface
	cfg        *rest.Config
	kubeconfig string
	dataDir    string
}

func startEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real skiff server")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	bin := filepath.Join(t.TempDir(), "skiff")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/skiff-sh/skiff/cmd/skiff").CombinedOutput(); err != nil {
		t.Fatalf("build skiff: %v\n%s", err, out)
	}
	dataDir := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "skiff.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: bin, DataDir: dataDir, Log: logFile, ExtraArgs: []string{"--log-level", "info"}})
	if err != nil {
		cancel()
		t.Fatalf("start skiff: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Stop()
		logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			tail := string(data)
			if len(tail) > 6000 {
				tail = tail[len(tail)-6000:]
			}
			t.Logf("skiff log (tail):\n%s", tail)
		}
	})
	cfg, err := srv.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{client: client, cfg: cfg, kubeconfig: srv.Kubeconfig, dataDir: dataDir}
}

// request is a PEM PKCS#10 request for cn in orgs with a fresh key.
func request(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func kubeletClientCSR(name string, req []byte, seconds int32) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           req,
			SignerName:        certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To(seconds),
			// The server replaces whatever a client claims with who it is.
			Username: "system:node:forged",
		},
	}
}

func (e *env) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", e.kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitFor polls the CSR until done accepts it.
func (e *env) waitFor(t *testing.T, name, what string, done func(*certificatesv1.CertificateSigningRequest) bool) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		csr, err := e.client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && done(csr) {
			return csr
		}
		if time.Now().After(deadline) {
			t.Fatalf("csr %s: not %s within 30s (last: %+v, %v)", name, what, csr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func condition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i := range csr.Status.Conditions {
		if csr.Status.Conditions[i].Type == t {
			return &csr.Status.Conditions[i]
		}
	}
	return nil
}

// checkIssued verifies the certificate against the cluster CA and its subject, usage and lifetime.
func (e *env) checkIssued(t *testing.T, csr *certificatesv1.CertificateSigningRequest, cn string, lifetime time.Duration, requested time.Time) {
	t.Helper()
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("status.certificate is not a PEM certificate: %q", csr.Status.Certificate)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(e.cfg.CAData) {
		t.Fatal("no cluster CA in the admin kubeconfig")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("certificate does not verify against the cluster CA: %v", err)
	}
	if cert.Subject.CommonName != cn || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Fatalf("subject %s, want CN=%s,O=system:nodes", cert.Subject, cn)
	}
	// The signer's clock is the server's, read between the request and now.
	if lo, hi := requested.Add(lifetime-time.Minute), time.Now().Add(lifetime+time.Minute); cert.NotAfter.Before(lo) || cert.NotAfter.After(hi) {
		t.Fatalf("notAfter %s, want within [%s, %s]", cert.NotAfter, lo, hi)
	}
}

func TestCertificateSigningRequests(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	csrs := e.client.CertificatesV1().CertificateSigningRequests()

	t.Run("discovery", func(t *testing.T) {
		if out := e.kubectl(t, "get", "--raw", "/apis/certificates.k8s.io/v1"); !strings.Contains(out, `"certificatesigningrequests/approval"`) ||
			!strings.Contains(out, `"certificatesigningrequests/status"`) {
			t.Fatalf("certificates.k8s.io/v1 discovery:\n%s", out)
		}
		if out := e.kubectl(t, "api-resources", "--api-group", "certificates.k8s.io"); !strings.Contains(out, "csr") || !strings.Contains(out, "false") {
			t.Fatalf("kubectl api-resources:\n%s", out)
		}
	})

	t.Run("approve and issue", func(t *testing.T) {
		requested := time.Now()
		created, err := csrs.Create(ctx, kubeletClientCSR("node-csr-approve", request(t, "system:node:worker-1", "system:nodes"), 3600), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Spec.Username != "kubernetes-admin" || !slices.Contains(created.Spec.Groups, "system:masters") {
			t.Fatalf("requestor %q %v, want the admin's identity", created.Spec.Username, created.Spec.Groups)
		}
		if out := e.kubectl(t, "get", "csr", "node-csr-approve"); !strings.Contains(out, "Pending") || !strings.Contains(out, "REQUESTEDDURATION") || !strings.Contains(out, "60m") {
			t.Fatalf("kubectl get csr:\n%s", out)
		}
		e.kubectl(t, "certificate", "approve", "node-csr-approve")
		issued := e.waitFor(t, "node-csr-approve", "issued", func(c *certificatesv1.CertificateSigningRequest) bool { return len(c.Status.Certificate) > 0 })
		if c := condition(issued, certificatesv1.CertificateApproved); c == nil || c.Reason != "KubectlApprove" || c.LastUpdateTime.IsZero() {
			t.Fatalf("approved condition %+v", c)
		}
		e.checkIssued(t, issued, "system:node:worker-1", time.Hour, requested)
		if out := e.kubectl(t, "get", "csr", "node-csr-approve"); !strings.Contains(out, "Approved,Issued") {
			t.Fatalf("kubectl get csr:\n%s", out)
		}
		// The spec is what was asked for: an update cannot change it.
		issued.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}
		updated, err := csrs.Update(ctx, issued, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(updated.Spec.Usages) != 2 || len(updated.Status.Certificate) == 0 {
			t.Fatalf("update changed the spec or dropped the status: %+v", updated)
		}
	})

	t.Run("deny", func(t *testing.T) {
		if _, err := csrs.Create(ctx, kubeletClientCSR("node-csr-deny", request(t, "system:node:worker-2", "system:nodes"), 3600), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.kubectl(t, "certificate", "deny", "node-csr-deny")
		denied := e.waitFor(t, "node-csr-deny", "denied", func(c *certificatesv1.CertificateSigningRequest) bool {
			return condition(c, certificatesv1.CertificateDenied) != nil
		})
		if c := condition(denied, certificatesv1.CertificateDenied); c.Reason != "KubectlDeny" || c.Status != corev1.ConditionTrue {
			t.Fatalf("denied condition %+v", c)
		}
		if out := e.kubectl(t, "get", "csr", "node-csr-deny"); !strings.Contains(out, "Denied") {
			t.Fatalf("kubectl get csr:\n%s", out)
		}
		// A decision stands: the API server refuses to approve what was denied.
		approve := denied.DeepCopy()
		approve.Status.Conditions = append(approve.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test",
		})
		_, err := csrs.UpdateApproval(ctx, "node-csr-deny", approve, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Approved and Denied conditions are mutually exclusive") {
			t.Fatalf("approving a denied request: %v", err)
		}
		again, err := csrs.Get(ctx, "node-csr-deny", metav1.GetOptions{})
		if err != nil || condition(again, certificatesv1.CertificateApproved) != nil || len(again.Status.Certificate) != 0 {
			t.Fatalf("denied request changed: %+v %v", again, err)
		}
	})

	t.Run("wrong common name fails", func(t *testing.T) {
		if _, err := csrs.Create(ctx, kubeletClientCSR("node-csr-wrong-cn", request(t, "alice", "system:nodes"), 3600), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.kubectl(t, "certificate", "approve", "node-csr-wrong-cn")
		failed := e.waitFor(t, "node-csr-wrong-cn", "failed", func(c *certificatesv1.CertificateSigningRequest) bool {
			return condition(c, certificatesv1.CertificateFailed) != nil
		})
		c := condition(failed, certificatesv1.CertificateFailed)
		if c.Reason != "SignerValidationFailure" || c.Message != "subject common name does not begin with system:node:" || len(failed.Status.Certificate) != 0 {
			t.Fatalf("failed condition %+v, certificate %d bytes", c, len(failed.Status.Certificate))
		}
		if out := e.kubectl(t, "get", "csr", "node-csr-wrong-cn"); !strings.Contains(out, "Approved,Failed") {
			t.Fatalf("kubectl get csr:\n%s", out)
		}
	})

	t.Run("invalid request is refused", func(t *testing.T) {
		bad := kubeletClientCSR("node-csr-invalid", []byte("not a request"), 599)
		_, err := csrs.Create(ctx, bad, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "PEM block type must be CERTIFICATE REQUEST") ||
			!strings.Contains(err.Error(), "may not specify a duration less than 600 seconds (10 minutes)") {
			t.Fatalf("create of an invalid request: %v", err)
		}
	})

	t.Run("node renewing itself is approved automatically", func(t *testing.T) {
		node := e.nodeClient(t, "worker-9")
		requested := time.Now()
		created, err := node.CertificatesV1().CertificateSigningRequests().Create(ctx, kubeletClientCSR("node-csr-renew", request(t, "system:node:worker-9", "system:nodes"), 7200), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Spec.Username != "system:node:worker-9" {
			t.Fatalf("requestor %q", created.Spec.Username)
		}
		issued := e.waitFor(t, "node-csr-renew", "issued", func(c *certificatesv1.CertificateSigningRequest) bool { return len(c.Status.Certificate) > 0 })
		if c := condition(issued, certificatesv1.CertificateApproved); c == nil || c.Reason != "AutoApproved" {
			t.Fatalf("approved condition %+v", c)
		}
		e.checkIssued(t, issued, "system:node:worker-9", 2*time.Hour, requested)
	})
}

// nodeClient is a client authenticated as node name with a certificate from the cluster CA, as a
// node that already joined holds one.
func (e *env) nodeClient(t *testing.T, name string) kubernetes.Interface {
	t.Helper()
	caCert, caKey := readCA(t, filepath.Join(e.dataDir, "pki"))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		NotBefore:    time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(e.cfg)
	cfg.TLSClientConfig = rest.TLSClientConfig{
		CAData:   e.cfg.CAData,
		CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyData:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	cfg.CertFile, cfg.KeyFile = "", ""
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func readCA(t *testing.T, dir string) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		t.Fatal("cluster CA files are not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		t.Fatalf("CA key %T cannot sign", k)
	}
	return cert, signer
}
