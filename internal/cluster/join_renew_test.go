package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
)

// TestClientCertRenewal: the node's client certificate is left alone before 80% of its life and
// replaced through a CSR (signer kube-apiserver-client-kubelet, the node's own name) after it.
func TestClientCertRenewal(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "test-ca", t0)
	if err != nil {
		t.Fatal(err)
	}
	id := join.Identity{Dir: t.TempDir()}
	// The current certificate: 100 hours of life from t0.
	oldCert := issueFor(t, ca, "system:node:w1", t0, t0.Add(100*time.Hour))
	if err := os.WriteFile(id.CertPath(), oldCert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(id.KeyPath(), []byte("old key"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	var requests []*certificatesv1.CertificateSigningRequest
	client.PrependReactor("create", "certificatesigningrequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
		csr := a.(clienttesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		csr.Name = "node-csr-test"
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		csr.Status.Certificate, err = ca.SignPublicKey(&x509.Certificate{Subject: req.Subject, NotBefore: t0, NotAfter: t0.Add(200 * time.Hour)}, req.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		requests = append(requests, csr)
		return false, nil, nil // stored by the fake's tracker, issued already
	})
	cfg := &Config{NodeName: "w1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	clk := clocktesting.NewFakeClock(t0.Add(79 * time.Hour))
	if err := renewClientCert(context.Background(), cfg, id, client, clk.Now(), false); err != nil {
		t.Fatal(err)
	}
	if len(requests) != 0 {
		t.Fatalf("renewed at 79%% of the certificate's life")
	}
	clk.Step(2 * time.Hour)
	if err := renewClientCert(context.Background(), cfg, id, client, clk.Now(), false); err != nil {
		t.Fatal(err)
	}
	if len(requests) != 1 {
		t.Fatalf("%d requests at 81%% of the certificate's life, want 1", len(requests))
	}
	r := requests[0]
	if r.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		t.Fatalf("signer %s", r.Spec.SignerName)
	}
	got, _ := os.ReadFile(id.CertPath())
	if bytes.Equal(got, oldCert) {
		t.Fatal("certificate file not replaced")
	}
	cert, err := pki.ParseCertificate(got)
	if err != nil || cert.Subject.CommonName != "system:node:w1" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Fatalf("renewed certificate %v, %v", cert.Subject, err)
	}
	key, _ := os.ReadFile(id.KeyPath())
	if string(key) == "old key" {
		t.Fatal("key not replaced")
	}
}

func issueFor(t *testing.T, ca *pki.CA, cn string, from, to time.Time) []byte {
	t.Helper()
	certPEM, _, err := ca.Issue(pki.Leaf{CommonName: cn, Organization: []string{"system:nodes"}, Client: true}, from)
	if err != nil {
		t.Fatal(err)
	}
	// Re-sign with the wanted validity (Issue picks its own).
	c, _ := pki.ParseCertificate(certPEM)
	out, err := ca.SignPublicKey(&x509.Certificate{Subject: c.Subject, NotBefore: from, NotAfter: to}, c.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
