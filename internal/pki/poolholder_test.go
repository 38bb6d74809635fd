package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki/pkitest"
)

// poolFixture is two CAs, a bundle file and a leaf pair of each CA for a server and a client.
type poolFixture struct {
	dir          string
	bundle       string
	ca1, ca2     *CA
	serving1     []KeyPairFiles
	serving2     []KeyPairFiles
	client1      tls.Certificate
	client2      tls.Certificate
	writeBundles func(cas ...*CA)
}

func newPoolFixture(t *testing.T) *poolFixture {
	t.Helper()
	dir := t.TempDir()
	// TLS verifies against the real clock.
	now := time.Now().Truncate(time.Second)
	f := &poolFixture{dir: dir, bundle: filepath.Join(dir, "bundle.crt")}
	var err error
	if f.ca1, err = LoadOrCreateCA(dir, "ca1", "test-ca-1", now); err != nil {
		t.Fatal(err)
	}
	if f.ca2, err = LoadOrCreateCA(dir, "ca2", "test-ca-2", now); err != nil {
		t.Fatal(err)
	}
	serving := Leaf{CommonName: "server", DNSNames: []string{"skiff-test"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}
	if f.serving1, err = f.ca1.EnsureServing(filepath.Join(dir, "s1"), "server", serving, now); err != nil {
		t.Fatal(err)
	}
	if f.serving2, err = f.ca2.EnsureServing(filepath.Join(dir, "s2"), "server", serving, now); err != nil {
		t.Fatal(err)
	}
	client := func(ca *CA) tls.Certificate {
		certPEM, keyPEM, err := ca.Issue(Leaf{CommonName: "client", Client: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	f.client1, f.client2 = client(f.ca1), client(f.ca2)
	f.writeBundles = func(cas ...*CA) {
		t.Helper()
		var data []byte
		for _, ca := range cas {
			data = append(data, ca.CertPEM...)
		}
		if err := WriteFileAtomic(f.bundle, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func rootsOf(cas ...*CA) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AddCert(ca.Cert)
	}
	return pool
}

// TestPoolHolderServerTrustsBundleAsOnDisk: a server whose client CAs come from a PoolHolder
// accepts a client certificate of a CA added to the bundle file and refuses one of a CA removed
// from it, without being rebuilt; a bundle caught broken keeps the last pool.
func TestPoolHolderServerTrustsBundleAsOnDisk(t *testing.T) {
	f := newPoolFixture(t)
	f.writeBundles(f.ca1)
	pool, err := NewPoolHolder(f.bundle)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := NewKeyPairHolder(f.serving1)
	if err != nil {
		t.Fatal(err)
	}
	// After KeyPairHolder.ServerTLS, whose ServeStaticRSA sets GetConfigForClient too.
	server := pool.ServerTLS(pairs.ServerTLS(&tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}))
	handshake := func(client tls.Certificate) error {
		_, err := pkitest.Handshake(server, &tls.Config{
			Certificates: []tls.Certificate{client}, RootCAs: rootsOf(f.ca1), ServerName: "skiff-test", MinVersion: tls.VersionTLS12,
		})
		return err
	}
	steps := []struct {
		name             string
		bundle           func()
		accept1, accept2 bool
	}{
		{"old CA only", func() {}, true, false},
		{"new CA added", func() { f.writeBundles(f.ca1, f.ca2) }, true, true},
		{"bundle caught broken keeps the last pool", func() {
			if err := WriteFileAtomic(f.bundle, []byte("half-written"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true, true},
		{"old CA retired", func() { f.writeBundles(f.ca2) }, false, true},
	}
	for _, step := range steps {
		step.bundle()
		if err := handshake(f.client1); (err == nil) != step.accept1 {
			t.Errorf("%s: client of the old CA: accepted=%v, want %v (err %v)", step.name, err == nil, step.accept1, err)
		}
		if err := handshake(f.client2); (err == nil) != step.accept2 {
			t.Errorf("%s: client of the new CA: accepted=%v, want %v (err %v)", step.name, err == nil, step.accept2, err)
		}
	}
	if got := len(pool.Certificates()); got != 1 || !pool.Certificates()[0].Equal(f.ca2.Cert) {
		t.Errorf("pool holds %d certificates, want only the new CA", got)
	}
}

// TestPoolHolderClientTrustsBundleAsOnDisk: a client whose roots come from a PoolHolder follows
// the bundle file too, and still checks the server's name.
func TestPoolHolderClientTrustsBundleAsOnDisk(t *testing.T) {
	f := newPoolFixture(t)
	f.writeBundles(f.ca1)
	pool, err := NewPoolHolder(f.bundle)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.ClientTLS(&tls.Config{}); err == nil {
		t.Error("a client without a fixed server name should be refused")
	}
	serverOf := func(pairs []KeyPairFiles) *tls.Config {
		h, err := NewKeyPairHolder(pairs)
		if err != nil {
			t.Fatal(err)
		}
		return h.ServerTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	server1, server2 := serverOf(f.serving1), serverOf(f.serving2)
	client := func(name string) *tls.Config {
		cfg, err := pool.ClientTLS(&tls.Config{ServerName: name, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if _, err := pkitest.Handshake(server2, client("skiff-test")); err == nil {
		t.Error("a server of a CA not in the bundle was trusted")
	}
	if _, err := pkitest.Handshake(server1, client("elsewhere")); err == nil {
		t.Error("a server certificate for another name was trusted")
	}
	cfg := client("skiff-test")
	f.writeBundles(f.ca1, f.ca2)
	for name, server := range map[string]*tls.Config{"old": server1, "new": server2} {
		if _, err := pkitest.Handshake(server, cfg); err != nil {
			t.Errorf("server of the %s CA with both trusted: %v", name, err)
		}
	}
	f.writeBundles(f.ca2)
	if _, err := pkitest.Handshake(server1, cfg); err == nil {
		t.Error("a server of the retired CA was still trusted")
	}
	if _, err := pkitest.Handshake(server2, cfg); err != nil {
		t.Errorf("server of the new CA: %v", err)
	}
}

// TestNewPoolHolderNeedsABundle: the files must load at start.
func TestNewPoolHolderNeedsABundle(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.crt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, files := range [][]string{nil, {filepath.Join(dir, "missing.crt")}, {empty}} {
		if _, err := NewPoolHolder(files...); err == nil {
			t.Errorf("NewPoolHolder(%v) should fail", files)
		}
	}
}
