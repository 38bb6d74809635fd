package cluster

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/pki"
)

// TestComponentTransportPresentsTheRenewedCertificate: a component's requests after its client
// certificate is renewed on disk go out with the new certificate, even when a kept-alive
// connection of the old one is idle in the pool: the API server authenticates each request by
// its connection's certificate, so after a CA rotation retires the old CA such a connection would
// be Unauthorized.
func TestComponentTransportPresentsTheRenewedCertificate(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pki.Leaf{CommonName: "system:kube-scheduler", Client: true}
	certPath, keyPath, err := ca.EnsureLeaf(dir, "client", leaf, now)
	if err != nil {
		t.Fatal(err)
	}
	servingPEM, servingKey, err := ca.Issue(pki.Leaf{CommonName: "kube-apiserver", DNSNames: []string{lbServerName}, Server: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(servingPEM, servingKey)
	if err != nil {
		t.Fatal(err)
	}
	// The server answers with the serial of the certificate the request's connection presented.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].SerialNumber.Text(16))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	holder, err := pki.NewKeyPairHolder([]pki.KeyPairFiles{{CertFile: certPath, KeyFile: keyPath}})
	if err != nil {
		t.Fatal(err)
	}
	roots, err := pki.NewPoolHolder(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := withRenewedClientCert(&rest.Config{Host: srv.URL}, holder, roots)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: rc.WrapTransport(nil)}
	presented := func() string {
		t.Helper()
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	first := serialOf(t, certPath)
	if got := presented(); got != first {
		t.Fatalf("presented %s, want %s", got, first)
	}
	cert, err := pki.ParseCertificate(mustRead(t, certPath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Renew(dir, "client", cert, 0, now); err != nil {
		t.Fatal(err)
	}
	// The holder looks at its files once per pki.RecheckInterval.
	time.Sleep(pki.RecheckInterval)
	renewed := serialOf(t, certPath)
	if got := presented(); got != renewed {
		t.Fatalf("after the renewal the request presented %s (the old one is %s), want the renewed %s", got, first, renewed)
	}
}
