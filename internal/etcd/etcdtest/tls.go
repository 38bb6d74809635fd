package etcdtest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/pki"
)

// PKI is a throw-away etcd CA in a temp dir with one certificate for members (server and client
// usage, valid for 127.0.0.1) and one client certificate.
type PKI struct {
	Dir      string
	CAFile   string
	CertFile string // member certificate (server and client auth)
	KeyFile  string
	// ClientCertFile and ClientKeyFile are a client-only certificate, as the API server's.
	ClientCertFile string
	ClientKeyFile  string
}

// NewPKI creates the CA and certificates with internal/pki.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(dir, "ca", "etcd-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2"), net.ParseIP("127.0.0.3"), net.ParseIP("127.0.0.4")}
	cert, key, err := ca.EnsureLeaf(dir, "member", pki.Leaf{CommonName: "etcd-member", DNSNames: []string{"localhost"}, IPs: ips, Server: true, Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	ccert, ckey, err := ca.EnsureLeaf(dir, "client", pki.Leaf{CommonName: "etcd-client", Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	return &PKI{Dir: dir, CAFile: filepath.Join(dir, "ca.crt"), CertFile: cert, KeyFile: key, ClientCertFile: ccert, ClientKeyFile: ckey}
}

// MemberTLS is the TLS of a member's client or peer side: this PKI's member certificate, with
// client certificates required.
func (p *PKI) MemberTLS() etcd.TLSFiles {
	return etcd.TLSFiles{CertFile: p.CertFile, KeyFile: p.KeyFile, TrustedCAFile: p.CAFile, ClientCertAuth: true}
}

// Spec is one TLS member of a test cluster on 127.0.0.1.
type Spec struct {
	Name       string
	Dir        string
	ClientPort int
	PeerPort   int
}

// NewSpec picks free ports and a temp data dir for member name.
func NewSpec(t testing.TB, name string) Spec {
	t.Helper()
	return Spec{Name: name, Dir: filepath.Join(t.TempDir(), "etcd"), ClientPort: FreePort(t), PeerPort: FreePort(t)}
}

// ClientURL and PeerURL are the member's https URLs.
func (s Spec) ClientURL() string { return fmt.Sprintf("https://127.0.0.1:%d", s.ClientPort) }
func (s Spec) PeerURL() string   { return fmt.Sprintf("https://127.0.0.1:%d", s.PeerPort) }

// Config is the member's configuration; initialCluster and state are etcd's --initial-cluster and
// --initial-cluster-state (empty: a new single-member cluster).
func (s Spec) Config(p *PKI, initialCluster, state string) etcd.Config {
	return etcd.Config{
		Name:             s.Name,
		DataDir:          s.Dir,
		ListenClientURLs: []string{s.ClientURL()},
		ListenPeerURLs:   []string{s.PeerURL()},
		InitialCluster:   initialCluster,
		ClusterState:     state,
		ClientTLS:        p.MemberTLS(),
		PeerTLS:          p.MemberTLS(),
		ReadyTimeout:     60 * time.Second,
		LogLevel:         "error",
	}
}

// StartMember starts a member and waits until it is ready; it is stopped when the test ends.
func StartMember(t testing.TB, cfg etcd.Config) *etcd.Member {
	t.Helper()
	m, err := etcd.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	select {
	case <-m.Ready():
		return m
	case <-m.Failed():
		t.Fatalf("etcd member %s: %v", cfg.Name, m.Err())
	}
	return nil
}
