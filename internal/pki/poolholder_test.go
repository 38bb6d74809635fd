package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

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
	// clock paces the holders' looks at their files: afterWrite steps it past RecheckInterval.
	clock *clocktesting.FakePassiveClock
}

// afterWrite lets the holders on f.clock see the files as they are now.
func (f *poolFixture) afterWrite() { f.clock.SetTime(f.clock.Now().Add(RecheckInterval)) }

func newPoolFixture(t *testing.T) *poolFixture {
	t.Helper()
	dir := t.TempDir()
	// TLS verifies against the real clock.
	now := time.Now().Truncate(time.Second)
	f := &poolFixture{dir: dir, bundle: filepath.Join(dir, "bundle.crt"), clock: clocktesting.NewFakePassiveClock(now)}
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
		f.afterWrite()
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
	pool.WithClock(f.clock)
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
			f.afterWrite()
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
	pool.WithClock(f.clock)
	if _, err := pool.ClientTLS(&tls.Config{}); err == nil {
		t.Error("a client without a fixed server name should be refused")
	}
	server1, server2 := servingConfig(t, f.serving1), servingConfig(t, f.serving2)
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

// TestPoolHolderClientOfManyHostsFollowsTheBundle: the API server's client of the kubelets trusts
// the bundle as it is on disk; a server dialed by name is checked by that name, one dialed by IP
// address (no SNI) by the unnamed check.
func TestPoolHolderClientOfManyHostsFollowsTheBundle(t *testing.T) {
	f := newPoolFixture(t)
	f.writeBundles(f.ca1)
	pool, err := NewPoolHolder(f.bundle)
	if err != nil {
		t.Fatal(err)
	}
	pool.WithClock(f.clock)
	server1, server2 := servingConfig(t, f.serving1), servingConfig(t, f.serving2)
	var unnamedSeen []string
	cfg := pool.ClientTLSForHosts(&tls.Config{MinVersion: tls.VersionTLS12}, func(c *x509.Certificate) error {
		unnamedSeen = append(unnamedSeen, c.Subject.CommonName)
		if c.Subject.CommonName != "server" {
			return errors.New("not a server")
		}
		return nil
	})
	// http.Transport fills in the name of each dial in a clone of the config.
	dial := func(server *tls.Config, name string) error {
		c := cfg.Clone()
		c.ServerName = name
		_, err := pkitest.Handshake(server, c)
		return err
	}
	steps := []struct {
		name      string
		bundle    func()
		host      string
		ok1, ok2  bool
		unnamedBy bool
	}{
		{"old CA by name", func() {}, "skiff-test", true, false, false},
		{"old CA, wrong name", func() {}, "elsewhere", false, false, false},
		{"both trusted, by IP", func() { f.writeBundles(f.ca1, f.ca2) }, "127.0.0.1", true, true, true},
		{"old CA retired, by name", func() { f.writeBundles(f.ca2) }, "skiff-test", false, true, false},
	}
	for _, step := range steps {
		step.bundle()
		unnamedSeen = nil
		if err := dial(server1, step.host); (err == nil) != step.ok1 {
			t.Errorf("%s: server of the old CA: accepted=%v, want %v (err %v)", step.name, err == nil, step.ok1, err)
		}
		if err := dial(server2, step.host); (err == nil) != step.ok2 {
			t.Errorf("%s: server of the new CA: accepted=%v, want %v (err %v)", step.name, err == nil, step.ok2, err)
		}
		if (len(unnamedSeen) > 0) != step.unnamedBy {
			t.Errorf("%s: unnamed check ran for %v, want it to run: %v", step.name, unnamedSeen, step.unnamedBy)
		}
	}
}

// TestKeyPairHolderSendsTheBundleAsOnDisk: the API server's chain is its CA bundle as it is now,
// so a joining node finds the CA its token pins after a rotation adds one.
func TestKeyPairHolderSendsTheBundleAsOnDisk(t *testing.T) {
	f := newPoolFixture(t)
	f.writeBundles(f.ca1)
	h, err := NewKeyPairHolderWithBundle(f.serving1, f.bundle)
	if err != nil {
		t.Fatal(err)
	}
	chainCNs := func() []string {
		var out []string
		for _, der := range h.Certificates()[0].Certificate[1:] {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c.Subject.CommonName)
		}
		return out
	}
	h.WithClock(f.clock)
	if got := chainCNs(); !slices.Equal(got, []string{"test-ca-1"}) {
		t.Fatalf("chain %v, want the one CA", got)
	}
	// Within RecheckInterval of its last look the holder serves what it has, unlooked at.
	var grown []byte
	for _, ca := range []*CA{f.ca1, f.ca2} {
		grown = append(grown, ca.CertPEM...)
	}
	if err := WriteFileAtomic(f.bundle, grown, 0o644); err != nil {
		t.Fatal(err)
	}
	f.clock.SetTime(f.clock.Now().Add(RecheckInterval - time.Millisecond))
	if got := chainCNs(); !slices.Equal(got, []string{"test-ca-1"}) {
		t.Fatalf("chain %v within the interval, want still the one CA", got)
	}
	f.clock.SetTime(f.clock.Now().Add(time.Millisecond))
	if got := chainCNs(); !slices.Equal(got, []string{"test-ca-1", "test-ca-2"}) {
		t.Fatalf("chain %v after the bundle grew, want both CAs", got)
	}
}

// servingConfig is a server's TLS serving pairs from a holder.
func servingConfig(t *testing.T, pairs []KeyPairFiles) *tls.Config {
	t.Helper()
	h, err := NewKeyPairHolder(pairs)
	if err != nil {
		t.Fatal(err)
	}
	return h.ServerTLS(&tls.Config{MinVersion: tls.VersionTLS12})
}
