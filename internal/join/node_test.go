package join

import (
	"crypto/x509"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"
)

func newCA(t *testing.T) *pki.CA {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "test-ca", t0)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func serverChain(t *testing.T, ca *pki.CA, withCA bool) []*x509.Certificate {
	t.Helper()
	certPEM, _, err := ca.Issue(pki.Leaf{CommonName: "kube-apiserver", IPs: []net.IP{net.ParseIP("172.31.0.1")}, Server: true}, t0)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !withCA {
		return []*x509.Certificate{leaf}
	}
	return []*x509.Certificate{leaf, ca.Cert}
}

func TestVerifyChain(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	chain := serverChain(t, ca, true)
	now := t0.Add(time.Minute)
	got, err := VerifyChain(chain, "172.31.0.1", CAHash(ca.Cert), now)
	if err != nil || !got.Equal(ca.Cert) {
		t.Fatalf("right pin: %v", err)
	}
	if _, err := VerifyChain(chain, "172.31.0.1", CAHash(other.Cert), now); !errors.Is(err, ErrCAMismatch) {
		t.Fatalf("wrong pin: err = %v", err)
	}
	if _, err := VerifyChain(serverChain(t, ca, false), "172.31.0.1", CAHash(ca.Cert), now); !errors.Is(err, ErrCAMismatch) {
		t.Fatalf("no CA in chain: err = %v", err)
	}
	// A server that shows the pinned CA but a certificate from another CA is refused too.
	mixed := []*x509.Certificate{serverChain(t, other, false)[0], ca.Cert}
	if _, err := VerifyChain(mixed, "172.31.0.1", CAHash(ca.Cert), now); err == nil {
		t.Fatal("a leaf the pinned CA did not sign was accepted")
	}
	if _, err := VerifyChain(chain, "172.31.9.9", CAHash(ca.Cert), now); err == nil {
		t.Fatal("a certificate for another address was accepted")
	}
}

func TestRenewalDecision(t *testing.T) {
	cert := &x509.Certificate{NotBefore: t0, NotAfter: t0.Add(100 * time.Hour)}
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{0, false}, {79 * time.Hour, false}, {80 * time.Hour, true}, {99 * time.Hour, true}, {200 * time.Hour, true}} {
		if got := NeedsRenewal(cert, t0.Add(c.at)); got != c.want {
			t.Errorf("at +%s: NeedsRenewal = %v, want %v", c.at, got, c.want)
		}
	}
	if !RenewAt(cert).Equal(t0.Add(80 * time.Hour)) {
		t.Fatalf("RenewAt = %s", RenewAt(cert))
	}
}

func TestJoinedNeedsAllThreeFiles(t *testing.T) {
	dir := t.TempDir()
	id := Identity{Dir: dir}
	if id.Joined() {
		t.Fatal("empty dir counts as joined")
	}
	for _, f := range []string{KubeletClientKeyFile, KubeletClientCertFile} {
		if err := pki.WriteFileAtomic(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if id.Joined() {
		t.Fatal("joined without the CA")
	}
	if err := pki.WriteFileAtomic(id.CAPath(), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !id.Joined() {
		t.Fatal("not joined with all three files")
	}
}
