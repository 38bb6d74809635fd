package cluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"sync"
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
	tr := &renewingTransport{holder: holder, roots: roots, newTransport: func() *http.Transport {
		return utilnet.SetTransportDefaults(&http.Transport{
			TLSHandshakeTimeout: 10 * time.Second,
			TLSClientConfig:     tlsCfg.Clone(),
			MaxIdleConnsPerHost: 25,
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		})
	}}
	rc.WrapTransport = func(http.RoundTripper) http.RoundTripper { return tr }
	return rc, nil
}

// renewingTransport sends each new request on connections made with the client certificate as it
// is now. A connection presents the certificate of its handshake for its whole life, and the API
// server authenticates every request by it: after a CA rotation retires the old CA, a request
// on a kept-alive connection of a certificate the old CA signed is Unauthorized although the
// renewed certificate is on disk. So when the certificate changes, new requests go to a new
// http.Transport and the old one's idle connections are closed; requests in flight on it (a
// watch) finish there undisturbed, and its connections close once idle (IdleConnTimeout).
type renewingTransport struct {
	holder *pki.KeyPairHolder
	// roots is the cluster CA bundle as on disk; chain finds the leaf's issuer in it.
	roots        *pki.PoolHolder
	newTransport func() *http.Transport
	mu           sync.Mutex
	cur          *http.Transport
	// leaf is the DER certificate cur's connections present.
	leaf []byte
	// chained is the last chain made by chain, for the leaf it starts with.
	chained []*x509.Certificate
}

// RoundTrip is http.RoundTripper.
func (t *renewingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.current().RoundTrip(req)
}

// CloseIdleConnections closes the current transport's idle connections (client-go's
// utilnet.CloseIdleConnectionsFor reaches it).
func (t *renewingTransport) CloseIdleConnections() { t.current().CloseIdleConnections() }

// current is the transport of the certificate on disk now.
func (t *renewingTransport) current() *http.Transport {
	leaf := t.holder.Certificates()[0].Certificate[0]
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil || !bytes.Equal(leaf, t.leaf) {
		if t.cur != nil {
			t.cur.CloseIdleConnections()
		}
		t.cur, t.leaf = t.newTransport(), leaf
	}
	return t.cur
}

// chain is the client certificate chain as it is now on disk: the leaf, then the CA of the
// bundle that signed it; it is the identity of the component's in-process client
// (inProcessRESTConfig), which has no handshake to read the files at. A leaf no CA of the bundle
// signed is presented alone, and the API server refuses it as a handshake would.
func (t *renewingTransport) chain() ([]*x509.Certificate, error) {
	pair := t.holder.Certificates()[0]
	t.mu.Lock()
	if len(t.chained) > 1 && bytes.Equal(t.chained[0].Raw, pair.Certificate[0]) {
		out := t.chained
		t.mu.Unlock()
		return out, nil
	}
	t.mu.Unlock()
	leaf := pair.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
	}
	out := []*x509.Certificate{leaf}
	for _, ca := range t.roots.Certificates() {
		if leaf.CheckSignatureFrom(ca) == nil {
			out = append(out, ca)
			break
		}
	}
	if len(out) > 1 {
		t.mu.Lock()
		t.chained = out
		t.mu.Unlock()
	}
	return out, nil
}

// componentClientTLS is a copy of the TLS of rc's transport when withRenewedClientCert made it
// (nil otherwise), for the connections a component makes beside client-go (the balancer's
// probes).
func componentClientTLS(rc *rest.Config) *tls.Config {
	if rc.WrapTransport == nil {
		return nil
	}
	if rt, ok := rc.WrapTransport(nil).(*renewingTransport); ok && rt.current().TLSClientConfig != nil {
		out := rt.current().TLSClientConfig.Clone()
		// The transport's protocols (h2 first) are its own; a caller's transport negotiates its own.
		out.NextProtos = nil
		return out
	}
	return nil
}
