package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/pki/pkitest"
)

// TestClientCAsFollowTheBundle is the ground of a CA rotation (issue 30): the API server's and
// the kubelet's TLS, and the client-certificate authenticator, read the cluster CA bundle
// (pki/ca.crt) as it is on disk. A client certificate of a CA added to the bundle is accepted and
// authenticates, without a restart; once the old CA is retired from the bundle its certificates
// are refused.
func TestClientCAsFollowTheBundle(t *testing.T) {
	now := time.Now()
	cfg, certs := testServerNode(t, now)
	setup, err := newAggregationSetup(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	apiTLS, err := servingTLS(certs, requestHeaderCAFile(cfg))
	if err != nil {
		t.Fatal(err)
	}
	kubeletTLS, err := kubeletServingTLS(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	authn := apiserver.ClientCertAuthenticator{Roots: setup.clusterRoots}
	oldCA, err := pki.LoadOrCreateCA(filepath.Join(cfg.DataDir, "pki"), "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "skiff-ca-next", now)
	if err != nil {
		t.Fatal(err)
	}
	type client struct {
		ca   *pki.CA
		pair tls.Certificate
	}
	clientOf := func(ca *pki.CA) client {
		certPEM, keyPEM, err := ca.Issue(pki.Leaf{CommonName: "admin", Organization: []string{"system:masters"}, Client: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return client{ca: ca, pair: pair}
	}
	oldClient, newClient := clientOf(oldCA), clientOf(newCA)
	// Servers are verified against both CAs throughout: only the client side is under test.
	roots := x509.NewCertPool()
	roots.AddCert(oldCA.Cert)
	roots.AddCert(newCA.Cert)
	accepted := func(server *tls.Config, serverName string, c client) error {
		// GetClientCertificate sends the pair even when the server's request names other CAs, as
		// a client holding a certificate of the retired CA would.
		_, err := pkitest.Handshake(server, &tls.Config{
			RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c.pair, nil },
		})
		return err
	}
	authenticates := func(c client) bool {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		leaf := c.pair.Leaf
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, VerifiedChains: [][]*x509.Certificate{{leaf, c.ca.Cert}}}
		user, ok, err := authn.AuthenticateRequest(r)
		return err == nil && ok && user.Name == "admin"
	}
	for _, phase := range rotationPhases(oldCA, newCA) {
		writeBundle(t, phase.bundle, filepath.Join(cfg.DataDir, "pki", "ca.crt"))
		for _, c := range []struct {
			name    string
			client  client
			trusted bool
		}{{"old CA's client", oldClient, phase.oldTrusted}, {"new CA's client", newClient, phase.newTrusted}} {
			if err := accepted(apiTLS, "kubernetes.default.svc", c.client); (err == nil) != c.trusted {
				t.Errorf("%s: API server, %s: accepted=%v, want %v (%v)", phase.name, c.name, err == nil, c.trusted, err)
			}
			if err := accepted(kubeletTLS, "n1", c.client); (err == nil) != c.trusted {
				t.Errorf("%s: kubelet, %s: accepted=%v, want %v (%v)", phase.name, c.name, err == nil, c.trusted, err)
			}
			if got := authenticates(c.client); got != c.trusted {
				t.Errorf("%s: authenticator, %s: authenticated=%v, want %v", phase.name, c.name, got, c.trusted)
			}
		}
	}
}

// TestServerTrustFollowsTheBundle: the components' transport to the API servers (and the
// balancer's probes, which copy its TLS) and a joined node's balancer probes verify the API
// servers against the cluster CA bundle as it is on disk: a server certificate of a CA added to
// the bundle is trusted without a restart, one of a retired CA refused.
func TestServerTrustFollowsTheBundle(t *testing.T) {
	now := time.Now()
	cfg, _ := testServerNode(t, now)
	rc, err := componentRESTConfig(cfg, "system:kube-scheduler", nil, now)
	if err != nil {
		t.Fatal(err)
	}
	componentTLS := componentClientTLS(rc)
	if componentTLS == nil {
		t.Fatal("the component's transport is not skiff's")
	}
	pkiDir := filepath.Join(cfg.DataDir, "pki")
	oldCA, err := pki.LoadOrCreateCA(pkiDir, "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "skiff-ca-next", now)
	if err != nil {
		t.Fatal(err)
	}
	// A joined node's identity: its own copy of the CA bundle and a client pair.
	id := join.Identity{Dir: t.TempDir()}
	certPEM, keyPEM, err := oldCA.Issue(pki.Leaf{CommonName: "system:node:w1", Organization: []string{"system:nodes"}, Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{id.CertPath(): certPEM, id.KeyPath(): keyPEM, id.CAPath(): oldCA.CertPEM} {
		if err := pki.WriteFileAtomic(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	probeTLS, err := joinedProbeTLS(id)
	if err != nil {
		t.Fatal(err)
	}
	serverOf := func(ca *pki.CA) *tls.Config {
		certPEM, keyPEM, err := ca.Issue(pki.Leaf{CommonName: "kube-apiserver", DNSNames: []string{lbServerName}, Server: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	oldServer, newServer := serverOf(oldCA), serverOf(newCA)
	for _, phase := range rotationPhases(oldCA, newCA) {
		writeBundle(t, phase.bundle, filepath.Join(pkiDir, "ca.crt"), id.CAPath())
		for _, client := range []struct {
			name string
			tls  *tls.Config
		}{{"component", componentTLS}, {"joined node's probe", probeTLS}} {
			for _, server := range []struct {
				name    string
				tls     *tls.Config
				trusted bool
			}{{"old CA's server", oldServer, phase.oldTrusted}, {"new CA's server", newServer, phase.newTrusted}} {
				_, err := pkitest.Handshake(server.tls, client.tls)
				if (err == nil) != server.trusted {
					t.Errorf("%s: %s to the %s: trusted=%v, want %v (%v)", phase.name, client.name, server.name, err == nil, server.trusted, err)
				}
			}
		}
	}
}

// testServerNode is the configuration and the certificates of a server node n1 in a fresh data
// dir.
func testServerNode(t *testing.T, now time.Time) (*Config, *nodeCerts) {
	t.Helper()
	cfg := &Config{DataDir: t.TempDir(), NodeName: "n1", AdvertiseAddress: "127.0.0.1", BindAddress: "127.0.0.1", ControlPlaneConfig: ControlPlaneConfig{HTTPSPort: 6443}, WorkerConfig: WorkerConfig{LBPort: 6444}, NetworkConfig: NetworkConfig{ServiceCIDR: "10.43.0.0/16"}}
	certs, err := ensureCertificates(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, certs
}

// rotationPhase is a step of a CA rotation: the bundle trusted, and which CA's certificates must
// be accepted.
type rotationPhase struct {
	name                   string
	bundle                 []*pki.CA
	oldTrusted, newTrusted bool
}

func rotationPhases(oldCA, newCA *pki.CA) []rotationPhase {
	return []rotationPhase{
		{"before the rotation", []*pki.CA{oldCA}, true, false},
		{"new CA added", []*pki.CA{oldCA, newCA}, true, true},
		{"old CA retired", []*pki.CA{newCA}, false, true},
	}
}

// writeBundle replaces each of paths with the certificates of cas, as a rotation's steps do.
func writeBundle(t *testing.T, cas []*pki.CA, paths ...string) {
	t.Helper()
	var data []byte
	for _, ca := range cas {
		data = append(data, ca.CertPEM...)
	}
	for _, path := range paths {
		if err := pki.WriteFileAtomic(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The holders look at their files once per pki.RecheckInterval.
	time.Sleep(pki.RecheckInterval)
}

// TestFrontProxyCAFollowsTheBundle: the request-header authenticator trusts the front-proxy CA
// bundle as it is on disk: a proxy certificate of a CA added to it names its caller without a
// restart, and one of a retired CA names no one.
func TestFrontProxyCAFollowsTheBundle(t *testing.T) {
	now := time.Now()
	cfg, _ := testServerNode(t, now)
	setup, err := newAggregationSetup(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	bundle := requestHeaderCAFile(cfg)
	oldCA, err := pki.LoadOrCreateCA(filepath.Join(cfg.DataDir, "pki"), "front-proxy-ca", "front-proxy-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.LoadOrCreateCA(t.TempDir(), "front-proxy-ca", "front-proxy-ca-next", now)
	if err != nil {
		t.Fatal(err)
	}
	proxyOf := func(ca *pki.CA) *x509.Certificate {
		certPEM, _, err := ca.Issue(pki.Leaf{CommonName: pki.FrontProxyClientName, Client: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := pki.ParseCertificate(certPEM)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	oldProxy, newProxy := proxyOf(oldCA), proxyOf(newCA)
	names := func(proxy *x509.Certificate) bool {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.Header.Set("X-Remote-User", "alice")
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{proxy}}
		user, ok, err := setup.requestHeader.AuthenticateRequest(r)
		return err == nil && ok && user.Name == "alice"
	}
	for _, phase := range rotationPhases(oldCA, newCA) {
		writeBundle(t, phase.bundle, bundle)
		if got := names(oldProxy); got != phase.oldTrusted {
			t.Errorf("%s: proxy of the old CA names its caller: %v, want %v", phase.name, got, phase.oldTrusted)
		}
		if got := names(newProxy); got != phase.newTrusted {
			t.Errorf("%s: proxy of the new CA names its caller: %v, want %v", phase.name, got, phase.newTrusted)
		}
	}
}
