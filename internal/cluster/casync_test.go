package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
)

func TestCAFollows(t *testing.T) {
	now := time.Now()
	newCA := func(name string) *x509.Certificate {
		t.Helper()
		certPEM, keyPEM, err := pki.GenerateCA(name, now)
		if err != nil {
			t.Fatal(err)
		}
		ca, err := pki.NewCA(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return ca.Cert
	}
	a, b, c := newCA("a"), newCA("b"), newCA("c")
	settled := func(x *x509.Certificate) caState { return caState{bundle: []*x509.Certificate{x}, signer: x} }
	trust := func(old, next *x509.Certificate) caState {
		return caState{bundle: []*x509.Certificate{old, next}, signer: old, next: next}
	}
	sign := func(old, next *x509.Certificate) caState {
		return caState{bundle: []*x509.Certificate{next, old}, signer: next}
	}
	for _, tc := range []struct {
		name           string
		local, cluster caState
		follow, via    bool
	}{
		{"the same state", settled(a), settled(a), false, false},
		{"trust", settled(a), trust(a, b), true, false},
		{"sign after trust", trust(a, b), sign(a, b), true, false},
		{"sign with trust missed", settled(a), sign(a, b), true, false},
		{"retire after sign", sign(a, b), settled(b), true, false},
		{"retire with sign missed: through sign", trust(a, b), settled(b), true, true},
		{"the Secret behind the rotating node (trust)", trust(a, b), settled(a), false, false},
		{"the Secret behind the rotating node (sign)", sign(a, b), trust(a, b), false, false},
		{"the Secret behind the rotating node (retire)", settled(b), sign(a, b), false, false},
		{"a whole rotation missed: two single CAs", settled(a), settled(b), false, false},
		{"another rotation", trust(a, b), trust(a, c), false, false},
		{"a rotation after the one the node is in", sign(a, b), trust(b, c), false, false},
	} {
		got := caFollows(tc.local, tc.cluster)
		if got.follow != tc.follow || got.viaSign != tc.via {
			t.Errorf("%s: follow %v via sign %v, want %v %v", tc.name, got.follow, got.viaSign, tc.follow, tc.via)
		}
	}
}

// TestFollowCA: a second control plane follows every phase a first one ran, its leaves
// re-issued by the new CA at sign; a node that missed the sign phase is taken through it; the
// rotating node never follows a Secret that lags behind it.
func TestFollowCA(t *testing.T) {
	now := time.Now()
	first, _ := nodePKI(t, now)
	secondNode := func() *Config {
		t.Helper()
		cfg := &Config{DataDir: t.TempDir()}
		cfg.AdvertiseAddress, cfg.BindAddress, cfg.NodeName, cfg.ServiceCIDR, cfg.HTTPSPort = "127.0.0.2", "127.0.0.2", "cp-2", "10.96.0.0/12", 6443
		dir := filepath.Join(cfg.DataDir, "pki")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"ca.crt", "ca.key"} {
			if err := os.WriteFile(filepath.Join(dir, f), mustRead(t, filepath.Join(first.DataDir, "pki", f)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ensureCertificates(cfg, now); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	second, late := secondNode(), secondNode()
	clusterCA := func() join.CAFiles {
		t.Helper()
		ca, err := join.ReadCAFiles(filepath.Join(first.DataDir, "pki"), "ca", "ca-next")
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	follow := func(cfg *Config, ca join.CAFiles, want bool) []RenewedCertificate {
		t.Helper()
		followed, renewed, err := followCA(cfg.DataDir, caFiles{name: "ca", next: "ca-next", kubeconfigs: true}, ca, now)
		if err != nil || followed != want {
			t.Fatalf("%s: followed %v (err %v), want %v", cfg.NodeName, followed, err, want)
		}
		if want {
			got, err := join.ReadCAFiles(filepath.Join(cfg.DataDir, "pki"), "ca", "ca-next")
			if err != nil || !sameCAFiles(got, ca) {
				t.Fatalf("%s: CA files after following differ from the cluster's (err %v)", cfg.NodeName, err)
			}
		}
		return renewed
	}
	rotate := func(phase CARotationPhase) join.CAFiles {
		t.Helper()
		before := clusterCA()
		if _, err := RotateCA(context.Background(), first.DataDir, CAKindCluster, phase, now); err != nil {
			t.Fatal(err)
		}
		// Between its files and its upload, the rotating node sees the Secret behind it.
		follow(first, before, false)
		return clusterCA()
	}

	trust := rotate(CAPhaseTrust)
	follow(first, trust, false)
	follow(second, trust, true)
	follow(late, trust, true)
	follow(second, trust, false) // done once
	sign := rotate(CAPhaseSign)
	if renewed := follow(second, sign, true); len(renewed) == 0 {
		t.Fatal("following sign re-issued none of the second node's leaves")
	}
	retire := rotate(CAPhaseRetire)
	follow(second, retire, true)
	if renewed := follow(late, retire, true); len(renewed) == 0 {
		t.Fatal("a node that missed sign had none of its leaves re-issued")
	}
	newCA, err := pki.NewCA(retire.Cert, retire.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*Config{second, late} {
		for _, leaf := range []string{"apiserver", "admin"} {
			c, err := pki.ParseCertificate(mustRead(t, filepath.Join(cfg.DataDir, "pki", leaf+".crt")))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.CheckSignatureFrom(newCA.Cert); err != nil {
				t.Errorf("%s's %s is not signed by the new CA: %v", cfg.NodeName, leaf, err)
			}
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "pki", "ca-next.crt")); !os.IsNotExist(err) {
			t.Errorf("%s kept ca-next.crt after retire: %v", cfg.NodeName, err)
		}
	}
}

func TestExtensionAuthCAUpdate(t *testing.T) {
	cur := map[string]string{
		extensionAuthClientCA: "old", extensionAuthRequestHeaderCA: "proxy",
		"requestheader-username-headers": `["X-Remote-User"]`,
	}
	if _, changed := extensionAuthCAUpdate(cur, []byte("old"), []byte("proxy")); changed {
		t.Error("the same bundles changed the ConfigMap")
	}
	next, changed := extensionAuthCAUpdate(cur, []byte("old+new"), []byte("proxy"))
	if !changed || next[extensionAuthClientCA] != "old+new" || next[extensionAuthRequestHeaderCA] != "proxy" ||
		next["requestheader-username-headers"] != `["X-Remote-User"]` {
		t.Errorf("after the cluster CA's trust phase: %v (changed %v)", next, changed)
	}
	if cur[extensionAuthClientCA] != "old" {
		t.Error("the current data was modified in place")
	}
	if next, changed := extensionAuthCAUpdate(nil, []byte("ca"), []byte("proxy")); !changed || len(next) != 2 {
		t.Errorf("from no data: %v", next)
	}
}

// TestRotateFrontProxyCA: the front-proxy CA rotates through the same phases in its own files,
// the API server's proxy client certificate re-issued at sign; the cluster CA and the kubeconfigs
// are left alone.
func TestRotateFrontProxyCA(t *testing.T) {
	now := time.Now()
	cfg, _ := nodePKI(t, now)
	pkiDir := filepath.Join(cfg.DataDir, "pki")
	if _, err := pki.EnsureFrontProxy(pkiDir, now); err != nil {
		t.Fatal(err)
	}
	clusterBefore, kubeconfigBefore := mustRead(t, filepath.Join(pkiDir, "ca.crt")), mustRead(t, cfg.AdminKubeconfigPath())
	oldProxyCA, err := pki.LoadCA(pkiDir, "front-proxy-ca")
	if err != nil {
		t.Fatal(err)
	}
	count := func() int { return countCerts(mustRead(t, filepath.Join(pkiDir, "front-proxy-ca.crt"))) }
	for _, step := range []struct {
		phase CARotationPhase
		certs int
	}{{CAPhaseTrust, 2}, {CAPhaseSign, 2}, {CAPhaseRetire, 1}} {
		r, err := RotateCA(context.Background(), cfg.DataDir, CAKindFrontProxy, step.phase, now)
		if err != nil {
			t.Fatalf("%s: %v", step.phase, err)
		}
		if got := count(); got != step.certs {
			t.Fatalf("after %s front-proxy-ca.crt holds %d CAs, want %d (steps %v)", step.phase, got, step.certs, r.Steps)
		}
		for _, s := range r.Steps {
			if strings.Contains(s, "kubeconfig") {
				t.Errorf("%s: a front-proxy step touched the kubeconfigs: %q", step.phase, s)
			}
		}
	}
	newProxyCA, err := pki.LoadCA(pkiDir, "front-proxy-ca")
	if err != nil {
		t.Fatal(err)
	}
	if newProxyCA.Cert.Equal(oldProxyCA.Cert) {
		t.Fatal("the front-proxy CA did not change")
	}
	client, err := pki.ParseCertificate(mustRead(t, filepath.Join(pkiDir, "front-proxy-client.crt")))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CheckSignatureFrom(newProxyCA.Cert); err != nil {
		t.Errorf("front-proxy-client is not signed by the new front-proxy CA: %v", err)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(pkiDir, "ca.crt")), clusterBefore) || !bytes.Equal(mustRead(t, cfg.AdminKubeconfigPath()), kubeconfigBefore) {
		t.Error("a front-proxy rotation changed the cluster CA or the admin kubeconfig")
	}
	if _, err := RotateCA(context.Background(), cfg.DataDir, CAKind("kubelet"), CAPhaseTrust, now); err == nil || !strings.Contains(err.Error(), "unknown CA") {
		t.Errorf("an unknown CA: %v", err)
	}
}
