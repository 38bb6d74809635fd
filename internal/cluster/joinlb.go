package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
)

// A joined node (worker or etcd-only: no API server of its own) reaches the API servers through
// its node-local balancer as the first node's components do. The balancer is L4 and passes TLS
// through, so nothing new has to be minted for it: clients verify the API servers' certificates
// against lbServerName, which every API server's certificate carries, and the balancer's own probes
// and endpoint watch authenticate with the node's client certificate (system:node:<name>, whose
// node role may read the kubernetes EndpointSlices and /readyz). Only the join itself (the CSR
// made with the bootstrap token) goes to --server directly.

// learnedBackendsFile keeps the API servers a joined node's balancer learned, so a restart can
// start from them when its --server is gone for good.
const learnedBackendsFile = "lb-backends"

// joinedLBSeeds are --server's host:port, then the API servers learned before a restart.
func joinedLBSeeds(cfg *Config) ([]string, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--server %q: not a URL with a host", cfg.Server)
	}
	seeds := []string{u.Host}
	data, err := os.ReadFile(filepath.Join(cfg.DataDir, learnedBackendsFile))
	if err == nil {
		for _, a := range strings.Fields(string(data)) {
			if !slices.Contains(seeds, a) {
				seeds = append(seeds, a)
			}
		}
	}
	return seeds, nil
}

// nodeClientTLS is what a joined node's clients present and trust, read from disk at each
// handshake: its client certificate (renewed through CSRs) and the cluster CA bundle (which a CA
// rotation changes; syncClusterCA writes it).
type nodeClientTLS struct {
	cert  *pki.KeyPairHolder
	roots *pki.PoolHolder
}

// newNodeClientTLS loads the joined node's identity, which must be there.
func newNodeClientTLS(id join.Identity) (*nodeClientTLS, error) {
	cert, err := pki.NewKeyPairHolder([]pki.KeyPairFiles{{CertFile: id.CertPath(), KeyFile: id.KeyPath()}})
	if err != nil {
		return nil, fmt.Errorf("node client certificate: %w", err)
	}
	roots, err := pki.NewPoolHolder(id.CAPath())
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	return &nodeClientTLS{cert: cert, roots: roots}, nil
}

// joinedRESTConfig is a client as the node (its renewable client certificate), through its
// balancer. client-go would read the CA file once (and close every connection when the
// certificate files change), so the transport is withRenewedClientCert's, over tlsFiles.
func joinedRESTConfig(cfg *Config, id join.Identity, tlsFiles *nodeClientTLS, userAgent string) (*rest.Config, error) {
	rc := id.RESTConfig(cfg.LBURL(), userAgent)
	rc.TLSClientConfig.ServerName = lbServerName
	return withRenewedClientCert(rc, tlsFiles.cert, tlsFiles.roots)
}

// joinedProbeTLS is the balancer's probe TLS for a joined node: the cluster CA bundle and the
// node's client certificate, both read from disk at each handshake (so a renewed certificate is
// used, and a CA rotation's bundle trusted, at once).
func joinedProbeTLS(id join.Identity) (*tls.Config, error) {
	roots, err := pki.NewPoolHolder(id.CAPath())
	if err != nil {
		return nil, fmt.Errorf("load balancer: cluster CA: %w", err)
	}
	if _, err := tls.LoadX509KeyPair(id.CertPath(), id.KeyPath()); err != nil {
		return nil, fmt.Errorf("load balancer: node client certificate: %w", err)
	}
	return roots.ClientTLS(&tls.Config{
		ServerName: lbServerName, MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			pair, err := tls.LoadX509KeyPair(id.CertPath(), id.KeyPath())
			if err != nil {
				return nil, fmt.Errorf("node client certificate: %w", err)
			}
			return &pair, nil
		},
	})
}

// startJoinedLB starts a joined node's balancer, seeded with --server and the API servers it
// learned before, and records what it learns.
func startJoinedLB(ctx context.Context, cfg *Config, id join.Identity, tlsFiles *nodeClientTLS) (*nodeLB, error) {
	seeds, err := joinedLBSeeds(cfg)
	if err != nil {
		return nil, err
	}
	probeTLS, err := joinedProbeTLS(id)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cfg.DataDir, learnedBackendsFile)
	learned := func(addrs []string) {
		if err := pki.WriteFileAtomic(path, []byte(strings.Join(addrs, "\n")+"\n"), 0o600); err != nil {
			cfg.Logger.Warn("load balancer: record learned API servers", "path", path, "err", err)
		}
	}
	rc, err := joinedRESTConfig(cfg, id, tlsFiles, "skiff-lb")
	if err != nil {
		return nil, err
	}
	return launchLB(ctx, cfg, seeds, probeTLS, rc, prometheus.NewRegistry(), learned)
}
