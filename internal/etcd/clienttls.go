package etcd

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/skiff-sh/skiff/internal/pki"
)

// ClientFiles are an etcd client's TLS files: the CA bundle it trusts and the certificate and key
// it presents (etcd's client-cert-auth). All empty means plain HTTP.
type ClientFiles struct {
	CAFile, CertFile, KeyFile string
}

// NewClientWithFiles is NewClient with TLS from files, where the client follows the files while
// it runs: its certificate is read at each handshake (a renewal), and the CA bundle is read again
// when it changes, so a server certificate signed by a CA added to the bundle is trusted, and
// one of a CA removed from it is refused, from the next connection on (an etcd CA rotation
// under a running API server). Connections already open keep the trust of their handshake.
func NewClientWithFiles(endpoints []string, files ClientFiles, log *slog.Logger) (*clientv3.Client, error) {
	tlsConfig, err := ClientTLSConfig(files.CAFile, files.CertFile, files.KeyFile)
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil || files.CAFile == "" {
		return NewClient(endpoints, tlsConfig, log)
	}
	roots, err := pki.NewPoolHolder(files.CAFile)
	if err != nil {
		return nil, fmt.Errorf("etcd client trust: %w", err)
	}
	creds := &followingTLS{base: tlsConfig, roots: roots}
	return NewClient(endpoints, tlsConfig, log, grpc.WithTransportCredentials(creds))
}

// followingTLS is gRPC's TLS transport credentials with the roots of a PoolHolder as they are at
// each handshake. Go's tls.Config takes a fixed pool, and the etcd client dials its endpoints by
// IP address (no name a VerifyConnection could check), so each handshake gets its own config:
// the base one with the current roots and the endpoint's host as the name to verify, which is
// what gRPC's TLS credentials do with a fixed config.
type followingTLS struct {
	base  *tls.Config
	roots *pki.PoolHolder
}

func (f *followingTLS) config(authority string) *tls.Config {
	cfg := f.base.Clone()
	cfg.RootCAs = f.roots.Pool()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(authority)
		if err != nil {
			host = authority
		}
		cfg.ServerName = host
	}
	return cfg
}

func (f *followingTLS) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return credentials.NewTLS(f.config(authority)).ClientHandshake(ctx, authority, raw)
}

func (f *followingTLS) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, fmt.Errorf("etcd client credentials: no server side")
}

func (f *followingTLS) Info() credentials.ProtocolInfo {
	return credentials.NewTLS(f.base).Info()
}

func (f *followingTLS) Clone() credentials.TransportCredentials {
	return &followingTLS{base: f.base.Clone(), roots: f.roots}
}

// OverrideServerName is gRPC's deprecated way to fix the name checked.
func (f *followingTLS) OverrideServerName(name string) error {
	f.base.ServerName = name
	return nil
}

// Probe asks the member at endpoint for its status over TLS with cfg, within timeout: nil when it
// answered. A member that refuses cfg's client certificate, or whose certificate cfg's roots do
// not verify, fails; so a probe tells which CAs a running member trusts and which signed it.
func Probe(ctx context.Context, endpoint string, cfg *tls.Config, timeout time.Duration) error {
	client, err := NewClient([]string{endpoint}, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := client.Status(ctx, endpoint); err != nil {
		return fmt.Errorf("etcd member %s: %w", endpoint, err)
	}
	return nil
}
