package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
)

func TestJoinedLBSeeds(t *testing.T) {
	cases := []struct {
		name    string
		learned string // "" for no file
		want    []string
	}{
		{"first start: --server only", "", []string{"172.31.5.1:6443"}},
		{"restart: --server first, then what was learned", "172.31.5.1:6443\n172.31.5.9:6443\n", []string{"172.31.5.1:6443", "172.31.5.9:6443"}},
		{"a learned list without --server keeps it too", "172.31.5.8:6443\n", []string{"172.31.5.1:6443", "172.31.5.8:6443"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := &Config{DataDir: t.TempDir(), Server: "https://172.31.5.1:6443"}
			if c.learned != "" {
				if err := os.WriteFile(filepath.Join(cfg.DataDir, learnedBackendsFile), []byte(c.learned), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := joinedLBSeeds(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("seeds %v, want %v", got, c.want)
			}
		})
	}
	if _, err := joinedLBSeeds(&Config{DataDir: t.TempDir(), Server: "not a url"}); err == nil {
		t.Error("a --server without a host was taken")
	}
}

func TestJoinedRESTConfigGoesThroughTheBalancer(t *testing.T) {
	cfg := &Config{BindAddress: "172.31.5.2", Server: "https://172.31.5.1:6443", WorkerConfig: WorkerConfig{LBPort: 6444}}
	id := join.Identity{Dir: t.TempDir()}
	ca, err := pki.LoadOrCreateCA(id.Dir, "ca", "skiff-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.EnsureLeaf(id.Dir, "kubelet-client", pki.Leaf{CommonName: "system:node:w", Client: true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	tlsFiles, err := newNodeClientTLS(id)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := joinedRESTConfig(cfg, id, tlsFiles, "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:6444" || rc.TLSClientConfig.ServerName != lbServerName {
		t.Errorf("host %s, server name %q: want the balancer on loopback, verified as %q", rc.Host, rc.TLSClientConfig.ServerName, lbServerName)
	}
	if rc.TLSClientConfig.CertFile != id.CertPath() || rc.TLSClientConfig.CAFile != id.CAPath() {
		t.Errorf("not the node's own certificate files: %+v", rc.TLSClientConfig)
	}
	// The transport is skiff's: it reads the CA bundle and the certificate at each handshake.
	tr, ok := rc.WrapTransport(nil).(*renewingTransport)
	if !ok || tr.current().TLSClientConfig.VerifyConnection == nil || tr.current().TLSClientConfig.GetClientCertificate == nil {
		t.Errorf("the node's client does not verify against the bundle as on disk: %#v", rc.WrapTransport(nil))
	}
}
