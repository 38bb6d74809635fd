package pki_test

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/pki/pkitest"
)

func servingLeaf() pki.Leaf {
	return pki.Leaf{CommonName: "kube-apiserver", DNSNames: []string{"localhost", "kubernetes.default.svc"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}
}

// TestServingPairsServeRSAOnlyClients: the two serving pairs make one tls.Config that a client
// offering only RSA suites completes a verified handshake with (on the RSA leaf, signed by the
// cluster CA for the same names), while TLS 1.3 and TLS 1.2 clients that offer ECDSA keep the
// ECDSA leaf.
func TestServingPairsServeRSAOnlyClients(t *testing.T) {
	ca, certs := newServing(t)
	if _, ok := certs[0].Leaf.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Fatalf("first serving certificate has a %T key, want ECDSA first", certs[0].Leaf.PublicKey)
	}
	if _, ok := certs[1].Leaf.PublicKey.(*rsa.PublicKey); !ok {
		t.Fatalf("second serving certificate has a %T key, want RSA", certs[1].Leaf.PublicKey)
	}
	server := &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, tc := range []struct {
		name   string
		client *tls.Config
		want   string
	}{
		{"RSA suites only, verifying", pkitest.RSAOnlyClient(roots, "kubernetes.default.svc"), "RSA"},
		{"RSA suites only, not verifying", pkitest.RSAOnlyClient(nil, ""), "RSA"},
		{"TLS 1.3", &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS13}, "ECDSA"},
		{"TLS 1.2 with every suite", &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS12}, "ECDSA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, err := pkitest.Handshake(server, tc.client)
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if got := pkitest.PublicKeyAlgorithm(state); got != tc.want {
				t.Fatalf("served a %s certificate, want %s", got, tc.want)
			}
		})
	}
}

// TestEnsureServingUpgradeAndRenewal: an install from before the RSA pair keeps its ECDSA pair
// byte for byte and gets the RSA one; the RSA key is generated once, not per start; near their
// expiry both pairs are renewed.
func TestEnsureServingUpgradeAndRenewal(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	// What an earlier skiff left: the ECDSA pair alone.
	if _, _, err := ca.EnsureLeaf(dir, "apiserver", servingLeaf(), now); err != nil {
		t.Fatal(err)
	}
	files := pki.ServingPairFiles(dir, "apiserver")
	old := readPairs(t, files[:1])
	if _, err := os.Stat(files[1].CertFile); !os.IsNotExist(err) {
		t.Fatalf("RSA pair before the upgrade: %v", err)
	}

	later := now.Add(time.Hour)
	if _, err := ca.EnsureServing(dir, "apiserver", servingLeaf(), later); err != nil {
		t.Fatal(err)
	}
	upgraded := readPairs(t, files)
	if upgraded[0] != old[0] {
		t.Fatal("the ECDSA pair on disk was replaced by the upgrade")
	}
	if _, err := pki.LoadServing(files); err != nil {
		t.Fatalf("upgraded pairs do not load: %v", err)
	}

	if _, err := ca.EnsureServing(dir, "apiserver", servingLeaf(), later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if again := readPairs(t, files); again != upgraded {
		t.Fatal("a start with both pairs on disk issued a new certificate")
	}

	due := later.Add(365*24*time.Hour - pki.RenewWithin + time.Hour)
	if _, err := ca.EnsureServing(dir, "apiserver", servingLeaf(), due); err != nil {
		t.Fatal(err)
	}
	renewed := readPairs(t, files)
	for i := range files {
		if renewed[i] == upgraded[i] {
			t.Errorf("%s was not renewed within %s of its expiry", files[i].CertFile, pki.RenewWithin)
		}
	}
}

// TestEnsureServingKeyKinds: a file meant for RSA that holds another key is replaced (it would
// leave RSA-only clients without a certificate); the default pair keeps whatever key is on disk.
func TestEnsureServingKeyKinds(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	files := pki.ServingPairFiles(dir, "kubelet")
	// Swapped: an RSA key in the default files, an ECDSA one in the RSA files.
	rsaLeaf := servingLeaf()
	rsaLeaf.Key = pki.RSA2048
	writePair(t, ca, files[0], rsaLeaf, now)
	writePair(t, ca, files[1], servingLeaf(), now)
	before := readPairs(t, files)
	if _, err := ca.EnsureServing(dir, "kubelet", servingLeaf(), now); err != nil {
		t.Fatal(err)
	}
	after := readPairs(t, files)
	if after[0] != before[0] {
		t.Error("the default pair was replaced for holding an RSA key")
	}
	certs, err := pki.LoadServing(files[1:])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := certs[0].Leaf.PublicKey.(*rsa.PublicKey); !ok {
		t.Errorf("the RSA pair holds a %T key after EnsureServing", certs[0].Leaf.PublicKey)
	}
}

// TestPickServing: GetCertificate's choice is the first certificate the ClientHello supports.
func TestPickServing(t *testing.T) {
	_, certs := newServing(t)
	if _, err := pki.PickServing(&tls.ClientHelloInfo{}, nil); err == nil {
		t.Error("no certificates: want an error")
	}
	for _, tc := range []struct {
		name  string
		hello *tls.ClientHelloInfo
		certs []tls.Certificate
		want  x509.PublicKeyAlgorithm
	}{
		{"RSA suites only", rsaOnlyHello(), certs, x509.RSA},
		{"RSA suites only, only ECDSA served", rsaOnlyHello(), certs[:1], x509.ECDSA},
		{"ECDSA and RSA suites", &tls.ClientHelloInfo{
			CipherSuites:      []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
			SupportedVersions: []uint16{tls.VersionTLS12}, SupportedCurves: []tls.CurveID{tls.CurveP256},
			SupportedPoints: []uint8{0}, SignatureSchemes: []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256, tls.PSSWithSHA256},
		}, certs, x509.ECDSA},
	} {
		got, err := pki.PickServing(tc.hello, tc.certs)
		if err != nil || got.Leaf.PublicKeyAlgorithm != tc.want {
			t.Errorf("%s: picked %v (%v), want %v", tc.name, got.Leaf.PublicKeyAlgorithm, err, tc.want)
		}
	}
}

// newServing is a new CA and the serving certificates EnsureServing issues from it, as loaded
// for a server.
func newServing(t *testing.T) (*pki.CA, []tls.Certificate) {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(dir, "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := ca.EnsureServing(dir, "apiserver", servingLeaf(), now)
	if err != nil {
		t.Fatal(err)
	}
	if want := pki.ServingPairFiles(dir, "apiserver"); len(pairs) != 2 || pairs[0] != want[0] || pairs[1] != want[1] || !strings.HasSuffix(pairs[1].CertFile, "apiserver-rsa.crt") {
		t.Fatalf("pairs %v, want %v", pairs, want)
	}
	certs, err := pki.LoadServing(pairs)
	if err != nil {
		t.Fatal(err)
	}
	return ca, certs
}

func rsaOnlyHello() *tls.ClientHelloInfo {
	return &tls.ClientHelloInfo{
		CipherSuites:      []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
		SupportedVersions: []uint16{tls.VersionTLS12}, SupportedCurves: []tls.CurveID{tls.X25519, tls.CurveP256},
		SupportedPoints: []uint8{0}, SignatureSchemes: []tls.SignatureScheme{tls.PKCS1WithSHA256, tls.PSSWithSHA256},
	}
}

func writePair(t *testing.T, ca *pki.CA, files pki.KeyPairFiles, leaf pki.Leaf, now time.Time) {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(leaf, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files.CertFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files.KeyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

// readPairs is the contents of each pair's files, certificate and key joined.
func readPairs(t *testing.T, files []pki.KeyPairFiles) [2]string {
	t.Helper()
	var out [2]string
	for i, f := range files {
		c, err := os.ReadFile(f.CertFile)
		if err != nil {
			t.Fatal(err)
		}
		k, err := os.ReadFile(f.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(c) + string(k)
	}
	return out
}

// TestServeStaticRSA: busybox wget's ClientHello (TLS 1.2, no signature_algorithms) is answered
// with alert 40 by a Go server whatever its certificates, and with the static RSA key exchange on
// the RSA certificate once ServeStaticRSA is set; a Go client still gets ECDHE on ECDSA.
func TestServeStaticRSA(t *testing.T) {
	_, certs := newServing(t)
	plain := &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	if suite, err := pkitest.LegacyHello(plain, pkitest.BusyboxSuites()); err == nil || !strings.Contains(err.Error(), "alert code 40") {
		t.Fatalf("busybox's hello without ServeStaticRSA: %s, %v; want alert 40 (what the cause is)", tls.CipherSuiteName(suite), err)
	}
	served := pki.ServeStaticRSA(plain.Clone(), func() *tls.Certificate { return pki.RSACertificate(certs) })
	suite, err := pkitest.LegacyHello(served, pkitest.BusyboxSuites())
	if err != nil || suite != tls.TLS_RSA_WITH_AES_128_GCM_SHA256 {
		t.Fatalf("busybox's hello: %s, %v; want TLS_RSA_WITH_AES_128_GCM_SHA256", tls.CipherSuiteName(suite), err)
	}
	// Without an RSA certificate (a joined node before its CSR is issued) nothing changes.
	none := pki.ServeStaticRSA(plain.Clone(), func() *tls.Certificate { return nil })
	if _, err := pkitest.LegacyHello(none, pkitest.BusyboxSuites()); err == nil {
		t.Fatal("busybox's hello without an RSA certificate was served")
	}
	state, err := pkitest.Handshake(served, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // only the negotiation is checked
	if err != nil || pkitest.PublicKeyAlgorithm(state) != "ECDSA" || state.Version != tls.VersionTLS13 || state.NegotiatedProtocol != "h2" {
		t.Fatalf("a Go client: %s %x %q, %v; want ECDSA over TLS 1.3 with h2", pkitest.PublicKeyAlgorithm(state), state.Version, state.NegotiatedProtocol, err)
	}
}

func TestNeedsStaticRSA(t *testing.T) {
	tls12, both := []uint16{tls.VersionTLS12}, []uint16{tls.VersionTLS13, tls.VersionTLS12}
	sigs := []tls.SignatureScheme{tls.PKCS1WithSHA256}
	for _, tc := range []struct {
		name  string
		hello tls.ClientHelloInfo
		want  bool
	}{
		{"busybox: TLS 1.2, ECDHE suites, no signature_algorithms", tls.ClientHelloInfo{SupportedVersions: tls12, CipherSuites: pkitest.BusyboxSuites()}, true},
		{"TLS 1.2 with signature_algorithms and ECDHE", tls.ClientHelloInfo{SupportedVersions: tls12, CipherSuites: pkitest.BusyboxSuites(), SignatureSchemes: sigs}, false},
		{"TLS 1.2 without any ECDHE suite", tls.ClientHelloInfo{SupportedVersions: tls12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256}, SignatureSchemes: sigs}, true},
		{"TLS 1.3 (the extension is mandatory there)", tls.ClientHelloInfo{SupportedVersions: both, CipherSuites: []uint16{tls.TLS_AES_128_GCM_SHA256}}, false},
	} {
		if got := pki.NeedsStaticRSA(&tc.hello); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
