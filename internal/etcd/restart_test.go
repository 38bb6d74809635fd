package etcd_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
	"github.com/skiff-sh/skiff/internal/pki"
)

// otherCA is a CA the test PKI's member does not trust, with a client certificate it signed.
func otherCA(t *testing.T) (*pki.CA, tls.Certificate) {
	t.Helper()
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "other-etcd-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueFor(pki.Leaf{CommonName: "other-client", Client: true}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ca, pair
}

// TestRestartTrustsTheBundleOnDisk: a running member keeps the CAs it started with although its
// bundle file changed, and trusts the file's CAs after RestartInTurn, with its data.
func TestRestartTrustsTheBundleOnDisk(t *testing.T) {
	p := etcdtest.NewPKI(t)
	spec := etcdtest.NewSpec(t, "m1")
	m := etcdtest.StartMember(t, spec.Config(p, "", ""))
	client, err := etcd.NewClientWithFiles([]string{spec.ClientURL()}, etcd.ClientFiles{CAFile: p.CAFile, CertFile: p.ClientCertFile, KeyFile: p.ClientKeyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := client.Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	other, otherClient := otherCA(t)
	memberCA, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(memberCA)
	probe := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, Certificates: []tls.Certificate{otherClient}}
	if err := etcd.Probe(ctx, spec.ClientURL(), probe.Clone(), 2*time.Second); err == nil {
		t.Fatal("a client certificate of a CA the member does not trust was taken")
	}
	if err := pki.WriteFileAtomic(p.CAFile, append(memberCA, other.CertPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := etcd.Probe(ctx, spec.ClientURL(), probe.Clone(), 2*time.Second); err == nil {
		t.Fatal("the running member took the new bundle without a restart: etcd reads it per handshake now, and the restart is not needed")
	}
	began := time.Now()
	if err := m.RestartInTurn(ctx, client); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %s", time.Since(began))
	if err := etcd.Probe(ctx, spec.ClientURL(), probe.Clone(), 10*time.Second); err != nil {
		t.Fatalf("after the restart the member refuses a client of the CA its bundle holds: %v", err)
	}
	resp, err := client.Get(ctx, "/k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after the restart /k = %v, %v", resp, err)
	}
	select {
	case <-m.Failed():
		t.Fatalf("a restart failed the member: %v", m.Err())
	default:
	}
	m.Stop()
}

// TestClientFollowsItsCABundle: a client whose bundle does not hold the member's CA is refused
// its connection, and connects once its bundle file does, without being made again.
func TestClientFollowsItsCABundle(t *testing.T) {
	p := etcdtest.NewPKI(t)
	spec := etcdtest.NewSpec(t, "m1")
	etcdtest.StartMember(t, spec.Config(p, "", ""))
	other, _ := otherCA(t)
	bundle := t.TempDir() + "/ca.crt"
	if err := os.WriteFile(bundle, other.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	client, err := etcd.NewClientWithFiles([]string{spec.ClientURL()}, etcd.ClientFiles{CAFile: bundle, CertFile: p.ClientCertFile, KeyFile: p.ClientKeyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	short, shortCancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = client.Get(short, "/k")
	shortCancel()
	if err == nil {
		t.Fatal("a client that does not trust the member's CA read from it")
	}
	memberCA, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteFileAtomic(bundle, append(append([]byte{}, other.CertPEM...), memberCA...), 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		try, tryCancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := client.Get(try, "/k")
		tryCancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the client never trusted the CA added to its bundle: %v", err)
		}
	}
}
