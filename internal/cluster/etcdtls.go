package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/pki"
)

// The etcd PKI follows kubeadm's layout under <data-dir>/pki: etcd/ca.{crt,key} is the etcd CA
// (born with the cluster CA), etcd/server and etcd/peer are the member's serving certificates
// (server and client usage, as peers dial each other with them), apiserver-etcd-client is the API
// server's client certificate. Every etcd listener is TLS with client certificates required.
const (
	etcdPKIDir            = "etcd"
	etcdClientCertName    = "apiserver-etcd-client"
	etcdClientTLSFileName = "etcd-client-tls"
)

// etcdClientFiles name the PEM files an etcd client uses; all empty means plain HTTP.
type etcdClientFiles struct {
	CAFile, CertFile, KeyFile string
}

func (f etcdClientFiles) tlsEnabled() bool { return f.CAFile != "" || f.CertFile != "" }

// etcdMemberCerts are the files of an embedded member.
type etcdMemberCerts struct {
	server, peer etcd.TLSFiles
	client       etcdClientFiles
}

// ensureEtcdCertificates creates (once) the etcd CA and keeps the member and API server client
// certificates valid for the node's addresses.
func ensureEtcdCertificates(cfg *Config, now time.Time) (*etcdMemberCerts, error) {
	pkiDir := filepath.Join(cfg.DataDir, "pki")
	dir := filepath.Join(pkiDir, etcdPKIDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create etcd pki dir: %w", err)
	}
	ca, err := pki.LoadOrCreateCA(dir, "ca", "etcd-ca", now)
	if err != nil {
		return nil, fmt.Errorf("etcd CA: %w", err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(cfg.AdvertiseAddress)}
	if ip := net.ParseIP(cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		ips = append(ips, ip)
	}
	dns := []string{"localhost"}
	if cfg.NodeName != "" {
		dns = append(dns, cfg.NodeName)
	}
	out := &etcdMemberCerts{}
	for _, side := range []struct {
		name string
		into *etcd.TLSFiles
	}{{"server", &out.server}, {"peer", &out.peer}} {
		cert, key, err := ca.EnsureLeaf(dir, side.name, pki.Leaf{CommonName: etcdMemberName(*cfg), DNSNames: dns, IPs: ips, Server: true, Client: true}, now)
		if err != nil {
			return nil, fmt.Errorf("etcd %s certificate: %w", side.name, err)
		}
		*side.into = etcd.TLSFiles{CertFile: cert, KeyFile: key, TrustedCAFile: caFile, ClientCertAuth: true}
	}
	cert, key, err := ca.EnsureLeaf(pkiDir, etcdClientCertName, pki.Leaf{CommonName: "kube-apiserver-etcd-client", Client: true}, now)
	if err != nil {
		return nil, fmt.Errorf("API server etcd client certificate: %w", err)
	}
	out.client = etcdClientFiles{CAFile: caFile, CertFile: cert, KeyFile: key}
	return out, nil
}

// etcdURL is https://host:port.
func etcdURL(host string, port int) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// etcdListenHost is where the member's listeners bind: the bind address (all addresses when it is
// unspecified).
func etcdListenHost(cfg Config) string { return cfg.BindAddress }

// etcdHTTPURLs is where the embedded member serves HTTP (--etcd-http-port); none: etcd's default.
func etcdHTTPURLs(cfg Config) []string {
	if cfg.EtcdHTTPPort == 0 {
		return nil
	}
	return []string{etcdURL(etcdListenHost(cfg), cfg.EtcdHTTPPort)}
}

// etcdLocalHost is how this node's own processes reach its member: the bind address, or loopback
// when binding to all addresses.
func etcdLocalHost(cfg Config) string {
	if ip := net.ParseIP(cfg.BindAddress); ip == nil || ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return cfg.BindAddress
}

// etcdPeerURL is the peer URL the node's member advertises.
func etcdPeerURL(cfg Config) string { return etcdURL(cfg.AdvertiseAddress, cfg.EtcdPeerPort) }

// recordEtcdClientTLS writes, beside etcd-endpoints, the client TLS files a local tool (`skiff etcd
// snapshot save`) uses: CA, certificate and key on three lines (empty file: plain HTTP).
func recordEtcdClientTLS(dataDir string, f etcdClientFiles) error {
	data := ""
	if f.tlsEnabled() {
		data = f.CAFile + "\n" + f.CertFile + "\n" + f.KeyFile + "\n"
	}
	return os.WriteFile(filepath.Join(dataDir, etcdClientTLSFileName), []byte(data), 0o600)
}

// readEtcdClientTLS reads what recordEtcdClientTLS wrote; a data dir from before TLS has no file.
func readEtcdClientTLS(dataDir string) (etcdClientFiles, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, etcdClientTLSFileName))
	if errors.Is(err, os.ErrNotExist) {
		return etcdClientFiles{}, nil
	}
	if err != nil {
		return etcdClientFiles{}, fmt.Errorf("read etcd client TLS files: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	for len(lines) < 3 {
		lines = append(lines, "")
	}
	return etcdClientFiles{CAFile: lines[0], CertFile: lines[1], KeyFile: lines[2]}, nil
}
