package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/pki/pkitest"
)

// TestServingTLSTakesRSAOnlyClients is issue 32's item 4: busybox wget's built-in TLS (TLS 1.2
// without the signature_algorithms extension) and a client that offers only RSA cipher suites
// failed the handshake with every skiff TLS port (alert 40), whose only certificate was ECDSA. The
// API server's, the kubelet's of a server node and the kubelet's of a joined node now serve the
// first over the static RSA key exchange and the second an RSA certificate, verified against the
// cluster CA for the names it is reached by; a client that offers ECDSA still gets ECDSA.
func TestServingTLSTakesRSAOnlyClients(t *testing.T) {
	now := time.Now()
	cfg, certs := testServerNode(t, now)
	apiTLS, err := servingTLS(certs)
	if err != nil {
		t.Fatal(err)
	}
	kubeletTLS, err := kubeletServingTLS(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certs.caPEM) {
		t.Fatal("cluster CA does not parse")
	}
	joinedTLS := issuedJoinedKubelet(t, now)
	for _, ep := range []struct {
		name       string
		server     *tls.Config
		serverName string
		roots      *x509.CertPool
	}{
		{"API server as kubernetes.default.svc", apiTLS, "kubernetes.default.svc", roots},
		{"API server by the service IP", apiTLS, "10.43.0.1", roots},
		{"kubelet of a server node", kubeletTLS, "n1", roots},
		{"kubelet of a joined node", joinedTLS.server, "w1", joinedTLS.roots},
	} {
		t.Run(ep.name, func(t *testing.T) {
			// busybox wget's own hello: TLS 1.2 without signature_algorithms.
			if suite, err := pkitest.LegacyHello(ep.server, pkitest.BusyboxSuites()); err != nil || suite != tls.TLS_RSA_WITH_AES_128_GCM_SHA256 {
				t.Errorf("busybox wget's ClientHello: %s, %v; want TLS_RSA_WITH_AES_128_GCM_SHA256", tls.CipherSuiteName(suite), err)
			}
			for _, c := range []struct {
				name   string
				client *tls.Config
				want   string
			}{
				{"RSA suites only, as wget --no-check-certificate", pkitest.RSAOnlyClient(nil, ""), "RSA"},
				{"RSA suites only, verifying", pkitest.RSAOnlyClient(ep.roots, ep.serverName), "RSA"},
				{"TLS 1.3", &tls.Config{RootCAs: ep.roots, ServerName: ep.serverName, MinVersion: tls.VersionTLS13}, "ECDSA"},
			} {
				state, err := pkitest.Handshake(ep.server, c.client)
				if err != nil {
					t.Errorf("%s: handshake: %v", c.name, err)
					continue
				}
				if got := pkitest.PublicKeyAlgorithm(state); got != c.want {
					t.Errorf("%s: served a %s certificate, want %s", c.name, got, c.want)
				}
			}
		})
	}
}

type joinedServer struct {
	server *tls.Config
	roots  *x509.CertPool
}

// issuedJoinedKubelet is a joined node's kubelet TLS after it obtained its serving certificates
// through CSRs, which a fake API server signs at creation.
func issuedJoinedKubelet(t *testing.T, now time.Time) joinedServer {
	t.Helper()
	caDir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(caDir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	client := signingClient(t, ca, now)
	id := join.Identity{Dir: t.TempDir()}
	cfg := &Config{NodeName: "w1", AdvertiseAddress: "127.0.0.1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	serving := &servingCert{}
	if err := requestServingCert(context.Background(), cfg, id, client, serving); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return joinedServer{server: joinedKubeletTLS(serving, caBundle(t, caDir)), roots: roots}
}

// signingClient is a fake API server with node w1 registered at 127.0.0.1 that issues every
// CertificateSigningRequest from ca, valid for a day from now, when it is created.
func signingClient(t *testing.T, ca *pki.CA, now time.Time) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "w1"},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}},
	})
	created := 0
	client.PrependReactor("create", "certificatesigningrequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
		csr := a.(clienttesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		created++
		csr.Name = fmt.Sprintf("%s%d", csr.GenerateName, created)
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		csr.Status.Certificate, err = ca.SignPublicKey(&x509.Certificate{
			Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}, req.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		return false, nil, nil // stored by the fake's tracker, issued already
	})
	return client
}

// TestJoinedServingCertUpgrade: a node that joined before skiff served RSA has only the ECDSA
// serving pair; it loads and serves it, and the certificate check asks for both pairs at once
// (an RSA-only client is turned away until then, and served after); at renewal both are due.
func TestJoinedServingCertUpgrade(t *testing.T) {
	now := time.Now()
	caDir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(caDir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	id := join.Identity{Dir: t.TempDir()}
	serving := &servingCert{}
	old := serving.pairs(id.Dir)[0]
	certPEM, keyPEM, err := ca.Issue(pki.Leaf{CommonName: "system:node:w1", Organization: []string{"system:nodes"}, DNSNames: []string{"w1"}, Server: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{old.CertFile: certPEM, old.KeyFile: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := serving.load(id.Dir, now); err != nil {
		t.Fatalf("the ECDSA pair of an earlier join does not load: %v", err)
	}
	if !serving.due(now) {
		t.Fatal("a node with the ECDSA pair alone is not due for its serving certificates")
	}
	server := joinedKubeletTLS(serving, caBundle(t, caDir))
	if state, err := pkitest.Handshake(server, &tls.Config{InsecureSkipVerify: true}); err != nil || pkitest.PublicKeyAlgorithm(state) != "ECDSA" { //nolint:gosec // only the key type is checked
		t.Fatalf("before the request: %s, %v; want the ECDSA pair served", pkitest.PublicKeyAlgorithm(state), err)
	}

	cfg := &Config{NodeName: "w1", AdvertiseAddress: "127.0.0.1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := requestServingCert(context.Background(), cfg, id, signingClient(t, ca, now), serving); err != nil {
		t.Fatal(err)
	}
	if serving.due(now) {
		t.Fatal("due right after both pairs were issued")
	}
	state, err := pkitest.Handshake(server, pkitest.RSAOnlyClient(nil, ""))
	if err != nil || pkitest.PublicKeyAlgorithm(state) != "RSA" {
		t.Fatalf("after the request, an RSA-only client: %s, %v", pkitest.PublicKeyAlgorithm(state), err)
	}
	// Reloaded from disk (a restart), both pairs are served.
	restarted := &servingCert{}
	if err := restarted.load(id.Dir, now); err != nil || restarted.due(now) {
		t.Fatalf("after a restart: %v, due %v", err, restarted.due(now))
	}
	// signingClient issues for a day: 80 % of it later both are due, together.
	if !restarted.due(now.Add(20 * time.Hour)) {
		t.Fatal("not due at 80 % of the certificates' life")
	}
}

// caBundle is a trust pool on dir's ca.crt.
func caBundle(t *testing.T, dir string) *pki.PoolHolder {
	t.Helper()
	h, err := pki.NewPoolHolder(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}
