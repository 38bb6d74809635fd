package cluster

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/pki"
)

// testCACert is a new CA's certificate named name.
func testCACert(t *testing.T, name string) *x509.Certificate {
	t.Helper()
	certPEM, _, err := pki.GenerateCA(name, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	c, err := pki.ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCARotationPlan(t *testing.T) {
	oldCA, newCA := testCACert(t, "old"), testCACert(t, "new")
	bundle := func(cs ...*x509.Certificate) []*x509.Certificate { return cs }
	tests := []struct {
		name    string
		phase   CARotationPhase
		st      caState
		want    []caStepKind
		wantErr string
	}{
		{name: "trust: a new CA beside the old", phase: CAPhaseTrust, st: caState{bundle: bundle(oldCA), signer: oldCA},
			want: []caStepKind{stepMakeNext, stepBundleTrustBoth, stepKubeconfigs}},
		{name: "trust: next made, not yet in the bundle", phase: CAPhaseTrust, st: caState{bundle: bundle(oldCA), signer: oldCA, next: newCA},
			want: []caStepKind{stepBundleTrustBoth, stepKubeconfigs}},
		{name: "trust: again", phase: CAPhaseTrust, st: caState{bundle: bundle(oldCA, newCA), signer: oldCA, next: newCA},
			want: []caStepKind{stepKubeconfigs}},
		{name: "trust: after sign", phase: CAPhaseTrust, st: caState{bundle: bundle(newCA, oldCA), signer: newCA},
			wantErr: "run --phase retire"},
		{name: "trust: sign interrupted", phase: CAPhaseTrust, st: caState{bundle: bundle(newCA, oldCA), signer: newCA, next: newCA},
			wantErr: "run --phase sign again"},
		{name: "sign: before trust", phase: CAPhaseSign, st: caState{bundle: bundle(oldCA), signer: oldCA},
			wantErr: "run --phase trust first"},
		{name: "sign: next not trusted", phase: CAPhaseSign, st: caState{bundle: bundle(oldCA), signer: oldCA, next: newCA},
			wantErr: "run --phase trust first"},
		{name: "sign: the new CA signs", phase: CAPhaseSign, st: caState{bundle: bundle(oldCA, newCA), signer: oldCA, next: newCA, stale: nil},
			want: []caStepKind{stepBundleNextFirst, stepSwapKey, stepRemoveNext, stepRenewStale, stepKubeconfigs}},
		{name: "sign: interrupted after the key", phase: CAPhaseSign, st: caState{bundle: bundle(newCA, oldCA), signer: newCA, next: newCA},
			want: []caStepKind{stepBundleNextFirst, stepRemoveNext, stepRenewStale, stepKubeconfigs}},
		{name: "sign: again", phase: CAPhaseSign, st: caState{bundle: bundle(newCA, oldCA), signer: newCA, stale: []string{"admin"}},
			want: []caStepKind{stepRenewStale, stepKubeconfigs}},
		{name: "retire: before sign", phase: CAPhaseRetire, st: caState{bundle: bundle(oldCA, newCA), signer: oldCA, next: newCA},
			wantErr: "run --phase sign first"},
		{name: "retire: a leaf of the old CA left", phase: CAPhaseRetire, st: caState{bundle: bundle(newCA, oldCA), signer: newCA, stale: []string{"etcd/peer"}},
			wantErr: "still signed by the old CA: etcd/peer"},
		{name: "retire: the old CA leaves", phase: CAPhaseRetire, st: caState{bundle: bundle(newCA, oldCA), signer: newCA},
			want: []caStepKind{stepBundleSignerOnly, stepKubeconfigs}},
		{name: "retire: again", phase: CAPhaseRetire, st: caState{bundle: bundle(newCA), signer: newCA},
			want: []caStepKind{stepKubeconfigs}},
		{name: "unknown phase", phase: "later", st: caState{bundle: bundle(oldCA), signer: oldCA}, wantErr: "unknown phase"},
		{name: "sign: etcd members that do not trust the new CA yet", phase: CAPhaseSign, st: caState{bundle: bundle(oldCA, newCA), signer: oldCA, next: newCA, waiting: []string{"cp-2 (https://127.0.0.3:2379)"}},
			wantErr: "do not trust ca-next.crt yet: cp-2 (https://127.0.0.3:2379)"},
		{name: "sign: again while members restart", phase: CAPhaseSign, st: caState{bundle: bundle(newCA, oldCA), signer: newCA},
			want: []caStepKind{stepRenewStale, stepKubeconfigs}},
		{name: "retire: etcd members serving the old CA's certificate", phase: CAPhaseRetire, st: caState{bundle: bundle(newCA, oldCA), signer: newCA, waiting: []string{"cp-3"}},
			wantErr: "still serving a certificate of the old CA: cp-3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := caRotationPlan(caFiles{name: "ca", next: "ca-next", kubeconfigs: true}, tt.phase, tt.st)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []caStepKind
			for _, s := range plan {
				if s.why == "" {
					t.Errorf("step %d without a reason", s.kind)
				}
				got = append(got, s.kind)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("plan %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRotateCAPhasesOnANodesFiles runs the three phases on a control plane's files: after trust
// both CAs are in ca.crt and the admin kubeconfig and the old one signs; after sign the new one
// signs and every leaf of the cluster CA is re-issued by it; after retire only the new CA is
// trusted and nothing left chains to the old one. The front-proxy and etcd CAs are not touched.
func TestRotateCAPhasesOnANodesFiles(t *testing.T) {
	now := time.Now()
	cfg, oldCA := nodePKI(t, now)
	pkiDir := filepath.Join(cfg.DataDir, "pki")
	etcdSerial := serialOf(t, filepath.Join(pkiDir, "etcd", "peer.crt"))
	bundleCNs := func() []string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		certs, err := pki.ParseCertificates(data)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range certs {
			out = append(out, c.Subject.CommonName)
		}
		return out
	}
	kubeconfigCAs := func() int {
		t.Helper()
		kc, err := clientcmd.LoadFromFile(cfg.AdminKubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range kc.Clusters {
			n += strings.Count(string(c.CertificateAuthorityData), "BEGIN CERTIFICATE")
		}
		return n
	}
	// issuers is the issuer of every leaf of the cluster CA's leaves (apiserver, admin, ...).
	clusterLeafIssuers := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, name := range []string{"apiserver", "apiserver-rsa", "admin"} {
			data, err := os.ReadFile(filepath.Join(pkiDir, name+".crt"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := pki.ParseCertificate(data)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = c.Issuer.CommonName
		}
		return out
	}
	oldName := oldCA.Cert.Subject.CommonName

	if _, err := RotateCA(context.Background(), cfg.DataDir, CAKindCluster, CAPhaseSign, now); err == nil {
		t.Fatal("sign before trust should be refused")
	}
	r, err := RotateCA(context.Background(), cfg.DataDir, CAKindCluster, CAPhaseTrust, now)
	if err != nil {
		t.Fatal(err)
	}
	cns := bundleCNs()
	if len(cns) != 2 || cns[0] != oldName || len(r.Trusted) != 2 {
		t.Fatalf("after trust: ca.crt holds %v (reported %v), want the old CA then the new", cns, r.Trusted)
	}
	newName := cns[1]
	if n := kubeconfigCAs(); n != 2 {
		t.Fatalf("after trust: the admin kubeconfig holds %d CAs, want 2", n)
	}
	if ca, err := pki.LoadCA(pkiDir, "ca"); err != nil || ca.Cert.Subject.CommonName != oldName {
		t.Fatalf("after trust: signer %v (err %v), want the old CA", ca, err)
	}
	if _, err := RotateCA(context.Background(), cfg.DataDir, CAKindCluster, CAPhaseRetire, now); err == nil {
		t.Fatal("retire before sign should be refused")
	}

	r, err = RotateCA(context.Background(), cfg.DataDir, CAKindCluster, CAPhaseSign, now)
	if err != nil {
		t.Fatal(err)
	}
	if cns := bundleCNs(); !slices.Equal(cns, []string{newName, oldName}) {
		t.Fatalf("after sign: ca.crt holds %v, want the new CA then the old", cns)
	}
	for name, issuer := range clusterLeafIssuers() {
		if issuer != newName {
			t.Errorf("after sign: %s issued by %q, want the new CA %q", name, issuer, newName)
		}
	}
	if len(r.Renewed) == 0 {
		t.Error("sign renewed nothing")
	}
	if _, err := os.Stat(filepath.Join(pkiDir, "ca-next.key")); !os.IsNotExist(err) {
		t.Errorf("ca-next.key is still there after sign: %v", err)
	}
	if serialOf(t, filepath.Join(pkiDir, "etcd", "peer.crt")) != etcdSerial {
		t.Error("the etcd CA's leaves were re-issued by a rotation of the cluster CA")
	}
	// The admin kubeconfig's certificate is the new one.
	if !containsCert(mustRead(t, cfg.AdminKubeconfigPath()), serialOf(t, filepath.Join(pkiDir, "admin.crt"))) {
		t.Error("the admin kubeconfig does not carry the re-issued admin certificate")
	}

	if _, err := RotateCA(context.Background(), cfg.DataDir, CAKindCluster, CAPhaseRetire, now); err != nil {
		t.Fatal(err)
	}
	if cns := bundleCNs(); !slices.Equal(cns, []string{newName}) {
		t.Fatalf("after retire: ca.crt holds %v, want the new CA alone", cns)
	}
	if n := kubeconfigCAs(); n != 1 {
		t.Fatalf("after retire: the admin kubeconfig holds %d CAs, want 1", n)
	}
	// Every leaf of the node verifies against its own CA files: nothing chains to the old CA.
	leaves, skipped, err := scanLeaves(pkiDir, nodeCAs(pkiDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) > 0 {
		t.Errorf("leaves no CA of the node signs after retire: %v", skipped)
	}
	for _, l := range leaves {
		if l.staleIssuer || l.cert.Issuer.CommonName == oldName {
			t.Errorf("%s still issued by the old CA", l.name)
		}
	}
	// Every phase again is a no-op or refused, never a second new CA.
	if _, err := RotateCA(context.Background(), cfg.DataDir, CAKindCluster, CAPhaseRetire, now); err != nil {
		t.Errorf("retire again: %v", err)
	}
	if cns := bundleCNs(); !slices.Equal(cns, []string{newName}) {
		t.Fatalf("after retire again: ca.crt holds %v", cns)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
