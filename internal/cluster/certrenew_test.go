package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/pki"
)

func TestRenewalPlan(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	issued := func(name string, ago, lifetime time.Duration) managedCert {
		at := now.Add(-ago)
		return managedCert{name: name, notBefore: at.Add(-pki.Backdate(lifetime)), notAfter: at.Add(lifetime)}
	}
	year := pki.DefaultLeafLifetime
	stale := func(c managedCert) managedCert { c.staleIssuer = true; return c }
	tests := []struct {
		name     string
		certs    []managedCert
		lifetime time.Duration
		want     []string
	}{
		{name: "fresh", certs: []managedCert{issued("apiserver", time.Hour, year)}},
		{name: "past two thirds", certs: []managedCert{issued("apiserver", 250*24*time.Hour, year), issued("admin", 200*24*time.Hour, year)}, want: []string{"apiserver"}},
		{name: "expired", certs: []managedCert{issued("etcd/peer", 2*year, year)}, want: []string{"etcd/peer"}},
		{name: "short lifetime, one third in", certs: []managedCert{issued("kubelet", 20*time.Second, time.Minute)}, lifetime: time.Minute},
		{name: "short lifetime, two thirds in", certs: []managedCert{issued("kubelet", 40*time.Second, time.Minute)}, lifetime: time.Minute, want: []string{"kubelet"}},
		{name: "longer than the lifetime asked", certs: []managedCert{issued("front-proxy-client", time.Hour, year), issued("kubelet", time.Second, time.Minute)},
			lifetime: time.Minute, want: []string{"front-proxy-client"}},
		{name: "default lifetime keeps a year-long leaf", certs: []managedCert{issued("admin", time.Hour, year)}, lifetime: 0},
		{name: "signed by a CA that no longer signs", certs: []managedCert{issued("admin", time.Hour, year), stale(issued("apiserver", time.Hour, year))},
			want: []string{"apiserver"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range renewalPlan(now, tt.certs, tt.lifetime) {
				if r.reason == "" {
					t.Errorf("%s renewed without a reason", r.name)
				}
				got = append(got, r.name)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("renewalPlan = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNextRenewalCheck(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	leaf := func(notBefore, notAfter time.Time) managedCert {
		return managedCert{notBefore: notBefore, notAfter: notAfter}
	}
	tests := []struct {
		name  string
		certs []managedCert
		want  time.Duration
	}{
		{name: "none", want: renewalMaxWait},
		{name: "a year-long leaf waits the longest", certs: []managedCert{leaf(now, now.Add(pki.DefaultLeafLifetime))}, want: renewalMaxWait},
		{name: "a minute-long leaf at two thirds", certs: []managedCert{leaf(now, now.Add(time.Minute)), leaf(now, now.Add(pki.DefaultLeafLifetime))}, want: 40 * time.Second},
		{name: "overdue retries after the minimum", certs: []managedCert{leaf(now.Add(-time.Hour), now.Add(-time.Minute))}, want: renewalMinWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextRenewalCheck(now, tt.certs); got != tt.want {
				t.Fatalf("nextRenewalCheck = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRotationPlan(t *testing.T) {
	leaves := []leafFile{{managedCert: managedCert{name: "apiserver"}}, {managedCert: managedCert{name: "apiserver-rsa"}}, {managedCert: managedCert{name: "etcd/peer"}}}
	names := func(rs []renewal) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.name)
		}
		return out
	}
	all, err := rotationPlan(leaves, nil)
	if err != nil || !slices.Equal(names(all), []string{"apiserver", "apiserver-rsa", "etcd/peer"}) {
		t.Fatalf("all: %v, %v", names(all), err)
	}
	some, err := rotationPlan(leaves, []string{"apiserver"})
	if err != nil || !slices.Equal(names(some), []string{"apiserver", "apiserver-rsa"}) {
		t.Fatalf("apiserver: %v, %v", names(some), err)
	}
	if _, err := rotationPlan(leaves, []string{"nope"}); err == nil {
		t.Fatal("an unknown name should be an error")
	}
}

// nodePKI lays out a control-plane node's certificates as ensureCertificates and
// ensureEtcdCertificates do, with the admin kubeconfig.
func nodePKI(t *testing.T, now time.Time) (*Config, *pki.CA) {
	t.Helper()
	cfg := &Config{DataDir: t.TempDir()}
	cfg.AdvertiseAddress, cfg.BindAddress, cfg.NodeName, cfg.ServiceCIDR, cfg.HTTPSPort = "127.0.0.1", "127.0.0.1", "cp", "10.96.0.0/12", 6443
	if _, err := ensureCertificates(cfg, now); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureEtcdCertificates(cfg, now); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(filepath.Join(cfg.DataDir, "pki"), "ca")
	if err != nil {
		t.Fatal(err)
	}
	return cfg, ca
}

func serialOf(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pki.ParseCertificate(data)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.Text(16)
}

// TestCertRenewerRenewsWhileRunning runs the loop on a fake clock over a node's certificates
// with a one-minute lifetime: the first pass shortens every year-long leaf, later ones renew each
// at two thirds of its minute, the admin kubeconfig follows, and Stop-like cancellation ends it.
func TestCertRenewerRenewsWhileRunning(t *testing.T) {
	start := time.Now().Truncate(time.Second)
	cfg, _ := nodePKI(t, start)
	pkiDir := filepath.Join(cfg.DataDir, "pki")
	clk := clocktesting.NewFakeClock(start)
	r := &certRenewer{dataDir: cfg.DataDir, lifetime: time.Minute, clock: clk, log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	watched := []string{"apiserver.crt", "apiserver-rsa.crt", "admin.crt", "etcd/peer.crt", "etcd/server.crt", "front-proxy-client.crt", etcdClientCertName + ".crt"}
	serials := func() map[string]string {
		out := map[string]string{}
		for _, f := range watched {
			if _, err := os.Stat(filepath.Join(pkiDir, f)); err == nil {
				out[f] = serialOf(t, filepath.Join(pkiDir, f))
			}
		}
		return out
	}
	before := serials()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	lifetimeOf := func(f string) time.Duration {
		data, _ := os.ReadFile(filepath.Join(pkiDir, f))
		c, err := pki.ParseCertificate(data)
		if err != nil {
			return 0
		}
		return pki.Lifetime(c)
	}
	waitFor("every leaf shortened to a minute", func() bool {
		for _, f := range watched {
			if _, ok := before[f]; ok && lifetimeOf(f) != time.Minute {
				return false
			}
		}
		return clk.HasWaiters()
	})
	short := serials()
	for f, s := range before {
		if short[f] == s {
			t.Errorf("%s kept serial %s", f, s)
		}
	}
	// Before two thirds of the minute nothing changes; after, everything is renewed again.
	clk.Step(30 * time.Second)
	waitFor("the loop to sleep again", clk.HasWaiters)
	if got := serials(); got["apiserver.crt"] != short["apiserver.crt"] {
		t.Fatalf("renewed at half of the lifetime")
	}
	clk.Step(15 * time.Second)
	waitFor("every leaf renewed at two thirds", func() bool {
		now := serials()
		for f, s := range short {
			if now[f] == s {
				return false
			}
		}
		return true
	})
	admin := serials()["admin.crt"]
	kc, err := os.ReadFile(cfg.AdminKubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	waitFor("the admin kubeconfig to carry the renewed certificate", func() bool {
		kc, _ = os.ReadFile(cfg.AdminKubeconfigPath())
		return containsCert(kc, admin)
	})
	// A leaf of another issuer is left alone.
	if _, skipped, err := scanLeaves(pkiDir, nodeCAs(pkiDir)); err != nil || len(skipped) != 0 {
		t.Fatalf("scan: skipped %v, %v", skipped, err)
	}
}

func containsCert(kubeconfig []byte, serial string) bool {
	kc, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return false
	}
	for _, user := range kc.AuthInfos {
		if c, err := pki.ParseCertificate(user.ClientCertificateData); err == nil && c.SerialNumber.Text(16) == serial {
			return true
		}
	}
	return false
}

// TestEtcdTLSReadsRenewedFilesPerHandshake proves that writing etcd's renewed files is enough:
// etcd's transport (client-go's pkg/transport.TLSInfo) loads the pair at each handshake, both
// the client side the API server uses and the server side a member serves with.
func TestEtcdTLSReadsRenewedFilesPerHandshake(t *testing.T) {
	start := time.Now().Truncate(time.Second)
	cfg, _ := nodePKI(t, start)
	certs, err := ensureEtcdCertificates(cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	client, err := etcd.ClientTLSConfig(certs.client.CAFile, certs.client.CertFile, certs.client.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string { return pairSerial(t)(client.GetClientCertificate(&tls.CertificateRequestInfo{})) }
	before := serial()
	if _, err := RotateCertificates(cfg.DataDir, []string{etcdClientCertName}, 0, start); err != nil {
		t.Fatal(err)
	}
	after := serial()
	if after == before || after != serialOf(t, certs.client.CertFile) {
		t.Fatalf("etcd client presents %s after the rotation (was %s, file holds %s)", after, before, serialOf(t, certs.client.CertFile))
	}
	// The server side: a TLS listener from the member's files serves the renewed pair.
	info := transport.TLSInfo{CertFile: certs.server.CertFile, KeyFile: certs.server.KeyFile, TrustedCAFile: certs.server.TrustedCAFile}
	srv, err := info.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	servedSerial := func() string { return pairSerial(t)(srv.GetCertificate(&tls.ClientHelloInfo{})) }
	was := servedSerial()
	if _, err := RotateCertificates(cfg.DataDir, []string{"etcd/server"}, 0, start); err != nil {
		t.Fatal(err)
	}
	if now := servedSerial(); now == was || now != serialOf(t, certs.server.CertFile) {
		t.Fatalf("etcd server serves %s after the rotation (was %s)", now, was)
	}
}

// pairSerial is the serial number of the certificate a GetCertificate-like callback returned.
func pairSerial(t *testing.T) func(*tls.Certificate, error) string {
	return func(c *tls.Certificate, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.SerialNumber.Text(16)
	}
}
