package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestKeyPairHolderServesRenewedPairs: a server and a client built on holders use a pair
// renewed on disk from the next handshake, keep the last good pair while the files hold a
// mismatched pair (the certificate renewed, its key not yet), and never restart.
func TestKeyPairHolderServesRenewedPairs(t *testing.T) {
	dir := t.TempDir()
	// TLS verifies against the real clock.
	now := time.Now().Truncate(time.Second) // certificates hold whole seconds
	ca, err := LoadOrCreateCA(dir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	leaf := Leaf{CommonName: "server", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true}
	pairs, err := ca.EnsureServing(dir, "server", leaf, now)
	if err != nil {
		t.Fatal(err)
	}
	holder, err := NewKeyPairHolder(pairs)
	if err != nil {
		t.Fatal(err)
	}
	// The holder looks at its files once per RecheckInterval: the clock is stepped past it after
	// each write.
	clk := clocktesting.NewFakePassiveClock(now)
	holder.WithClock(clk)
	afterWrite := func() { clk.SetTime(clk.Now().Add(RecheckInterval)) }
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", holder.ServerTLS(&tls.Config{ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The server echoes the serial of the client's certificate; the client reads it.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil {
					return
				}
				_, _ = c.Write([]byte(tc.ConnectionState().PeerCertificates[0].SerialNumber.Text(16) + "\n"))
			}()
		}
	}()
	handshake := func() (serverSerial, clientSerial string) {
		t.Helper()
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, GetClientCertificate: holder.GetClientCertificate, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer c.Close()
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Text(16), string(buf[:max(n-1, 0)])
	}
	server1, client1 := handshake()
	if server1 != client1 {
		t.Fatalf("server %s and client %s should present the same pair", server1, client1)
	}
	cert, err := ParseCertificate(mustRead(t, pairs[0].CertFile))
	if err != nil {
		t.Fatal(err)
	}
	// Half-written: a new certificate beside the old key. The holder keeps the old pair.
	newCert, newKey, err := ca.Issue(LeafOf(cert), now)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(pairs[0].CertFile, newCert, 0o600); err != nil {
		t.Fatal(err)
	}
	afterWrite()
	if s, _ := handshake(); s != server1 {
		t.Fatalf("a mismatched pair on disk: served %s, want the last good %s", s, server1)
	}
	if err := WriteFileAtomic(pairs[0].KeyFile, newKey, 0o600); err != nil {
		t.Fatal(err)
	}
	afterWrite()
	server2, client2 := handshake()
	if server2 == server1 || client2 != server2 {
		t.Fatalf("after the renewal: server %s, client %s; want both new (was %s)", server2, client2, server1)
	}
	// Renew replaces the pair too.
	renewed, err := ca.Renew(dir, "server", cert, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	afterWrite()
	if s, _ := handshake(); s != renewed.SerialNumber.Text(16) {
		t.Fatalf("after Renew: served %s, want %s", s, renewed.SerialNumber.Text(16))
	}
	if got := renewed.NotAfter.Sub(now); got != time.Minute {
		t.Fatalf("renewed for %s, want 1m", got)
	}
	if got := Lifetime(renewed); got != time.Minute {
		t.Fatalf("Lifetime = %s, want 1m", got)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRenewAtAndLifetime(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, lifetime := range []time.Duration{time.Minute, 2 * time.Minute, 9 * time.Hour, 24 * time.Hour, DefaultLeafLifetime} {
		cert := &x509.Certificate{NotBefore: now.Add(-Backdate(lifetime)), NotAfter: now.Add(lifetime)}
		if got := Lifetime(cert); got != lifetime {
			t.Errorf("Lifetime of a %s leaf = %s", lifetime, got)
		}
		at := RenewAt(cert)
		if left := cert.NotAfter.Sub(at); left < lifetime/3 || left > lifetime/2 {
			t.Errorf("%s leaf renews with %s left, want about a third of its lifetime", lifetime, left)
		}
	}
}

func TestLeafOfKeepsWhatTheLeafSays(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	ca, err := LoadOrCreateCA(dir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	want := Leaf{CommonName: "system:node:a", Organization: []string{"system:nodes"}, DNSNames: []string{"a", "localhost"},
		IPs: []net.IP{net.ParseIP("10.0.0.1").To4()}, Server: true, Key: RSA2048}
	certPEM, _, err := ca.Issue(want, now)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	got := LeafOf(cert)
	if !ca.covers(cert, got, now) || got.Key != RSA2048 || got.Client || !got.Server || !ca.Signs(cert) {
		t.Fatalf("LeafOf = %+v, want %+v", got, want)
	}
	if ca.Signs(ca.Cert) {
		t.Fatal("a CA is no leaf to renew")
	}
}
