package cluster

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/pki"
)

// withRenewedClientCert makes rc present holder's client certificate, read at each handshake, so
// a component keeps connecting after its certificate is renewed on disk. client-go's rest.Config
// has no certificate callback, and its own file reloading (ReloadTLSFiles) closes every open
// connection when the files change, which fails the requests and watches in flight; so the
// transport is skiff's, handed to client-go through WrapTransport (client-go calls it with the
// transport it built from the TLS fields, which stay in rc for the readers of CertData and
// CAData: the in-process transport, the controller manager's root CA). The server name is the
// one every API server's certificate carries, so the same transport reaches the local server and
// the node-local balancer alike. Connections already open stay open across a renewal. The API
// servers are verified against roots as they are on disk at each handshake, so a CA rotation's
// new CA is trusted, and its retired one refused, without a restart.
func withRenewedClientCert(rc *rest.Config, holder *pki.KeyPairHolder, roots *pki.PoolHolder) (*rest.Config, error) {
	tlsCfg, err := roots.ClientTLS(&tls.Config{
		ServerName: lbServerName, MinVersion: tls.VersionTLS12,
		GetClientCertificate: holder.GetClientCertificate,
	})
	if err != nil {
		return nil, err
	}
	tr := utilnet.SetTransportDefaults(&http.Transport{
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsCfg,
		MaxIdleConnsPerHost: 25,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	})
	rc.WrapTransport = func(http.RoundTripper) http.RoundTripper { return tr }
	return rc, nil
}

// componentClientTLS is a copy of the TLS of rc's transport when withRenewedClientCert made it
// (nil otherwise), for the connections a component makes beside client-go (the balancer's
// probes).
func componentClientTLS(rc *rest.Config) *tls.Config {
	if rc.WrapTransport == nil {
		return nil
	}
	if tr, ok := rc.WrapTransport(nil).(*http.Transport); ok && tr.TLSClientConfig != nil {
		out := tr.TLSClientConfig.Clone()
		// The transport's protocols (h2 first) are its own; a caller's transport negotiates its own.
		out.NextProtos = nil
		return out
	}
	return nil
}
