package pki

import (
	"fmt"
	"path/filepath"
	"time"
)

// FrontProxyClientName is the common name of the front-proxy client certificate, the name
// extension API servers accept (--requestheader-allowed-names).
const FrontProxyClientName = "front-proxy-client"

// FrontProxyFiles are the front-proxy CA certificate and the client pair it signs.
type FrontProxyFiles struct {
	CACert, ClientCert, ClientKey string
}

// EnsureFrontProxy keeps the front-proxy CA (dir/front-proxy-ca.crt, .key) and the client
// certificate the API server presents to extension API servers (dir/front-proxy-client.crt,
// .key), as kubeadm lays them out. The CA is separate from the cluster CA: extension servers
// trust it only for the request headers naming the user.
func EnsureFrontProxy(dir string, now time.Time) (FrontProxyFiles, error) {
	ca, err := LoadOrCreateCA(dir, "front-proxy-ca", "front-proxy-ca", now)
	if err != nil {
		return FrontProxyFiles{}, fmt.Errorf("front-proxy CA: %w", err)
	}
	certPath, keyPath, err := ca.EnsureLeaf(dir, "front-proxy-client", Leaf{CommonName: FrontProxyClientName, Client: true}, now)
	if err != nil {
		return FrontProxyFiles{}, fmt.Errorf("front-proxy client certificate: %w", err)
	}
	return FrontProxyFiles{CACert: filepath.Join(dir, "front-proxy-ca.crt"), ClientCert: certPath, ClientKey: keyPath}, nil
}
