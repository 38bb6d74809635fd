package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/pki"
)

// TestEtcdCARotation rotates the etcd CA of two stacked control planes and an etcd-only node
// (three members) with `skiff certificate rotate-ca --ca etcd` (trust, sign, retire) under the
// traffic of TestCARotation and a writer through every node. The members restart one at a time to read each changed bundle
// (etcd reads the CAs it trusts when it starts); sign and retire refuse until the members are
// ready for them, and the test runs them as an operator would, again until they pass. No
// acknowledged write is lost, the worker stays Ready, no pod restarts; at the end every etcd
// certificate of every node chains to the new CA, and every member refuses a client
// certificate of the old CA and takes one of the new.
func TestEtcdCARotation(t *testing.T) {
	rc := startCARotationCluster(t, "etcd")
	c := rc.c
	all := append([]*cluster{c}, rc.others...)
	etcdPKI := func(cl *cluster) string { return filepath.Join(cl.dataDir, "pki", "etcd") }
	pods := podRecords(t, c)
	oldCA, err := pki.LoadCA(etcdPKI(c), "ca")
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	traffic := startCATraffic(ctx, c)
	writes := startWriteRecorder(t, "etcdca", all...)
	began := time.Now()
	time.Sleep(10 * time.Second)

	rotate := func(phase string) {
		t.Helper()
		tries := 0
		eventually(t, 240*time.Second, func() error {
			tries++
			out, err := execOutput(skiffBinary, "certificate", "rotate-ca", "--ca", "etcd", "--data-dir", c.dataDir, "--phase", phase)
			if err != nil {
				return fmt.Errorf("rotate-ca --ca etcd --phase %s: %v\n%s", phase, err, out)
			}
			t.Logf("rotate-ca --ca etcd --phase %s (run %d):\n%s", phase, tries, out)
			return nil
		})
		want := readFile(t, filepath.Join(etcdPKI(c), "ca.crt"))
		for _, o := range rc.others {
			eventually(t, 60*time.Second, func() error {
				if got := readFile(t, filepath.Join(etcdPKI(o), "ca.crt")); got != want {
					return fmt.Errorf("%s's etcd/ca.crt differs from the rotating node's after %s\n%s", o.dataDir, phase, o.log())
				}
				return nil
			})
		}
	}
	rotate("trust")
	rotate("sign") // refused until every member restarted to trust the new CA
	newCA := firstCA(t, filepath.Join(etcdPKI(c), "ca.crt"))
	if newCA.Equal(oldCA.Cert) {
		t.Fatal("after sign the first CA of etcd/ca.crt is still the old one")
	}
	rotate("retire") // refused until every member serves a certificate of the new CA
	for _, cl := range all {
		if certs, err := pki.ParseCertificates([]byte(readFile(t, filepath.Join(etcdPKI(cl), "ca.crt")))); err != nil || len(certs) != 1 || !certs[0].Equal(newCA) {
			t.Errorf("%s: etcd/ca.crt holds %d CAs (err %v), want the new CA alone", cl.dataDir, len(certs), err)
		}
	}

	// The members restart once more to leave the old CA: a client certificate it signed is
	// refused by every one, and one of the new CA is taken.
	newSigner, err := pki.LoadCA(etcdPKI(c), "ca")
	if err != nil {
		t.Fatal(err)
	}
	oldClient, newClient := etcdProbeClient(t, oldCA, newCA), etcdProbeClient(t, newSigner, newCA)
	eventually(t, 240*time.Second, func() error {
		for _, cl := range all {
			url := memberURL(t, cl)
			if err := etcd.Probe(ctx, url, oldClient.Clone(), 5*time.Second); err == nil {
				return fmt.Errorf("member %s still takes a client certificate of the old etcd CA", url)
			}
			if err := etcd.Probe(ctx, url, newClient.Clone(), 5*time.Second); err != nil {
				return fmt.Errorf("member %s refuses a client certificate of the new etcd CA: %v", url, err)
			}
		}
		return nil
	})
	time.Sleep(10 * time.Second)
	cancel()
	r := traffic.wait()
	acked, window := writes.stopAndCheck(t, c, "an etcd CA rotation", began)
	if err := r.tally.collect(c); err != nil {
		t.Errorf("client pod logs: %v", err)
	}
	ok, failed := r.tally.counts()
	t.Logf("%d acknowledged writes; %d API requests (%d failed), %d logs+exec rounds, %d watch restarts, %d Ready checks; pod traffic: %d ok, %d failed; failed-write window %s",
		acked, r.requests, r.failed, r.kubeletCalls, r.watchRestarts, r.readyChecks, ok, failed, window)
	for _, f := range r.failures {
		t.Logf("failed: %s", f)
	}
	r.tally.checkAllAnswered(t)
	for _, f := range r.failures {
		if strings.Contains(f, "Ready") {
			t.Errorf("worker-1 was not Ready during the rotation: %s", f)
		}
	}
	checkUntouched(t, c, pods, "")
	for _, cl := range all {
		for _, dir := range []string{etcdPKI(cl), filepath.Join(cl.dataDir, "pki")} {
			if err := chainsOnlyTo(dir, newCA, oldCA.Cert); err != nil {
				t.Error(err)
			}
		}
	}
	if t.Failed() {
		for _, cl := range all {
			t.Logf("%s log:\n%s", cl.dataDir, cl.log())
		}
	}
}

// etcdProbeClient is a TLS client configuration with a client certificate signer issued and the
// members' certificates checked against roots.
func etcdProbeClient(t *testing.T, signer *pki.CA, roots *x509.Certificate) *tls.Config {
	t.Helper()
	certPEM, keyPEM, err := signer.IssueFor(pki.Leaf{CommonName: "e2e-etcd-probe", Client: true}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(roots)
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}}
}

// memberURL is the client URL of a control plane's own etcd member, as its data dir records it.
func memberURL(t *testing.T, cl *cluster) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cl.dataDir, "etcd-endpoints"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))[0]
}

// TestEtcdCARotationOneMember: on a single node the member has no other to lend its API server
// while it restarts; the rotation still completes with every acknowledged write kept, the member
// refuses the old CA at the end, and the failed-write window is reported.
func TestEtcdCARotationOneMember(t *testing.T) {
	c := newCluster(t)
	etcdDir := filepath.Join(c.dataDir, "pki", "etcd")
	oldCA, err := pki.LoadCA(etcdDir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	writes := startWriteRecorder(t, "etcdca1", c)
	began := time.Now()
	for _, phase := range []string{"trust", "sign", "retire"} {
		eventually(t, 120*time.Second, func() error {
			out, err := execOutput(skiffBinary, "certificate", "rotate-ca", "--ca", "etcd", "--data-dir", c.dataDir, "--phase", phase)
			if err != nil {
				return fmt.Errorf("rotate-ca --ca etcd --phase %s: %v\n%s", phase, err, out)
			}
			return nil
		})
	}
	newSigner, err := pki.LoadCA(etcdDir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	oldClient, newClient := etcdProbeClient(t, oldCA, newSigner.Cert), etcdProbeClient(t, newSigner, newSigner.Cert)
	url := memberURL(t, c)
	ctx := context.Background()
	eventually(t, 120*time.Second, func() error {
		if err := etcd.Probe(ctx, url, oldClient.Clone(), 5*time.Second); err == nil {
			return fmt.Errorf("the member still takes a client certificate of the old etcd CA")
		}
		return etcd.Probe(ctx, url, newClient.Clone(), 5*time.Second)
	})
	writes.waitForMore(t, 3, time.Minute)
	acked, window := writes.stopAndCheck(t, c, "an etcd CA rotation of one member", began)
	t.Logf("figure: one member, %d acknowledged writes kept; failed-write window %s over two member restarts (%s in all)",
		acked, window.Round(100*time.Millisecond), time.Since(began).Round(time.Second))
}
