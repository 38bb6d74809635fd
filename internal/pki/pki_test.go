package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

func TestCAIsCreatedOnceAndReused(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first, err := LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	second, err := LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Cert.Equal(second.Cert) {
		t.Fatal("second load created a new CA instead of reusing the stored one")
	}
	if !first.Cert.IsCA {
		t.Fatal("CA certificate is not marked as a CA")
	}
}

func TestHalfPresentCAIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateCA(dir, "ca", "skiff-ca", time.Now()); err == nil {
		t.Fatal("expected an error for a CA certificate without its key")
	}
}

func TestEnsureLeafReusesAndReissues(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	leaf := Leaf{CommonName: "kube-apiserver", DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}
	certPath, _, err := ca.EnsureLeaf(dir, "serving", leaf, now)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(certPath)
	if _, _, err := ca.EnsureLeaf(dir, "serving", leaf, now); err != nil {
		t.Fatal(err)
	}
	same, _ := os.ReadFile(certPath)
	if string(before) != string(same) {
		t.Fatal("a covering certificate was reissued")
	}

	leaf.IPs = append(leaf.IPs, net.ParseIP("10.0.0.7"))
	if _, _, err := ca.EnsureLeaf(dir, "serving", leaf, now); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(certPath)
	cert, err := ParseCertificate(after)
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.IPAddresses) != 2 {
		t.Fatalf("reissued certificate has IPs %v, want both addresses", cert.IPAddresses)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, DNSName: "localhost"}); err != nil {
		t.Fatalf("serving certificate does not verify against the CA: %v", err)
	}

	expiring := now.Add(DefaultLeafLifetime - 10*24*time.Hour)
	if _, _, err := ca.EnsureLeaf(dir, "serving", leaf, expiring); err != nil {
		t.Fatal(err)
	}
	renewed, _ := os.ReadFile(certPath)
	if string(renewed) == string(after) {
		t.Fatal("a certificate with ten days left was not renewed")
	}
}

func TestKubeconfigLoads(t *testing.T) {
	now := time.Now()
	ca, err := LoadOrCreateCA(t.TempDir(), "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(Leaf{CommonName: "admin", Organization: []string{"system:masters"}, Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Kubeconfig("skiff", "https://127.0.0.1:6443", ca.CertPEM, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || len(cfg.TLSClientConfig.CertData) == 0 {
		t.Fatalf("unexpected rest config %+v", cfg)
	}
}

func TestSignPublicKeyCapsAtTheCA(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(dir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewCA(ca.CertPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "system:node:a"}, NotBefore: now, NotAfter: now.Add(100 * 365 * 24 * time.Hour)}
	certPEM, err := again.SignPublicKey(tmpl, key.Public())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		t.Fatal(err)
	}
	if !cert.NotAfter.Equal(ca.Cert.NotAfter) || cert.IsCA || cert.Subject.CommonName != "system:node:a" {
		t.Fatalf("certificate: notAfter %s (CA %s), isCA %v, CN %q", cert.NotAfter, ca.Cert.NotAfter, cert.IsCA, cert.Subject.CommonName)
	}
}

func TestDamagedOrHalfPresentLeafIsRefused(t *testing.T) {
	now := time.Now()
	leaf := Leaf{CommonName: "kube-apiserver", DNSNames: []string{"localhost"}, Server: true}
	other := Leaf{CommonName: "other", Client: true}
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		wantErr string // "" means the pair is (re)issued
	}{
		{"absent pair is issued", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "apiserver.crt"))
			os.Remove(filepath.Join(dir, "apiserver.key"))
		}, ""},
		{"missing key", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "apiserver.key")) }, "apiserver.key"},
		{"missing certificate", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "apiserver.crt")) }, "apiserver.crt"},
		{"garbled certificate", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "apiserver.crt"), "not a certificate")
		}, "certificate " + "%DIR%/apiserver.crt is damaged"},
		{"garbled key", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "apiserver.key"), "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n")
		}, "key %DIR%/apiserver.key is damaged"},
		{"key of another certificate", func(t *testing.T, dir string) {
			data, err := os.ReadFile(filepath.Join(dir, "other.key"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "apiserver.key"), string(data))
		}, "does not belong to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ca, err := LoadOrCreateCA(dir, "ca", "test-ca", now)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := ca.EnsureLeaf(dir, "apiserver", leaf, now); err != nil {
				t.Fatal(err)
			}
			if _, _, err := ca.EnsureLeaf(dir, "other", other, now); err != nil {
				t.Fatal(err)
			}
			tt.damage(t, dir)
			_, _, err = ca.EnsureLeaf(dir, "apiserver", leaf, now)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("EnsureLeaf: %v", err)
				}
				return
			}
			want := strings.ReplaceAll(tt.wantErr, "%DIR%", dir)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "delete "+filepath.Join(dir, "apiserver.crt")) {
				t.Fatalf("EnsureLeaf: %v, want an error containing %q and the fix", err, want)
			}
		})
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sa.key")
	if _, err := LoadKey(path); err == nil || !strings.Contains(err.Error(), "sa.key is missing") {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := LoadOrCreateKey(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path); err != nil {
		t.Fatalf("present key: %v", err)
	}
	writeFile(t, path, "garbage")
	if _, err := LoadKey(path); err == nil || !strings.Contains(err.Error(), "sa.key is damaged") {
		t.Fatalf("damaged key: %v", err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestEnsureFrontProxy: the client certificate chains to the front-proxy CA (not the cluster CA)
// with its well-known name and client usage, and a second call keeps both.
func TestEnsureFrontProxy(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	files, err := EnsureFrontProxy(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(files.CACert)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := os.ReadFile(files.ClientCert)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now}); err != nil {
		t.Fatalf("client certificate does not verify against the front-proxy CA: %v", err)
	}
	if cert.Subject.CommonName != FrontProxyClientName {
		t.Fatalf("common name %q", cert.Subject.CommonName)
	}
	again, err := EnsureFrontProxy(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	certPEM2, _ := os.ReadFile(again.ClientCert)
	if string(certPEM2) != string(certPEM) {
		t.Fatal("a second call replaced a valid client certificate")
	}
}

// TestEnsureLeafConcurrently: goroutines asking at once for the same leaf all get the one pair on
// disk, and it is a matching pair (a node's roles do this at start).
func TestEnsureLeafConcurrently(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca, err := LoadOrCreateCA(dir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			certPath, keyPath, err := ca.EnsureLeaf(dir, "client-node", Leaf{CommonName: "system:node:n", Organization: []string{"system:nodes"}, Client: true}, now)
			if err != nil {
				errs <- err
				return
			}
			if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A CA bundle (as during a rotation) holds several certificates; other PEM blocks are skipped.
func TestParseCertificatesReadsABundle(t *testing.T) {
	now := time.Now()
	a, err := LoadOrCreateCA(t.TempDir(), "a", "ca-a", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreateCA(t.TempDir(), "b", "ca-b", now)
	if err != nil {
		t.Fatal(err)
	}
	other := pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{1, 2, 3}})
	bundle := append(append(append([]byte{}, a.CertPEM...), other...), b.CertPEM...)
	certs, err := ParseCertificates(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(certs) != 2 || !certs[0].Equal(a.Cert) || !certs[1].Equal(b.Cert) {
		t.Fatalf("parsed %d certificates, want ca-a then ca-b", len(certs))
	}
	for _, bad := range [][]byte{nil, other, []byte("not PEM")} {
		if _, err := ParseCertificates(bad); err == nil {
			t.Errorf("ParseCertificates(%q) did not fail", bad)
		}
	}
	broken := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})
	if _, err := ParseCertificates(append(append([]byte{}, a.CertPEM...), broken...)); err == nil {
		t.Error("a broken certificate in the bundle was accepted")
	}
}
