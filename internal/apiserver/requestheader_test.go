package apiserver

import (
	"crypto/tls"
	"crypto/x509"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/internal/pki"
)

// testClientCert issues a client certificate of a fresh CA named caName, and returns the CA's
// pool, the CA certificate and the certificate.
func testClientCert(t *testing.T, dir, caName, cn string) (*x509.CertPool, *x509.Certificate, *x509.Certificate) {
	t.Helper()
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(dir, caName, caName, now)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath, err := ca.EnsureLeaf(dir, caName+"-"+cn, pki.Leaf{CommonName: cn, Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool, ca.Cert, cert
}

// handshakeState is the TLS state of a connection whose listener trusts every CA in cas for
// client certificates: the chains verified the way crypto/tls verifies them.
func handshakeState(t *testing.T, cert *x509.Certificate, cas ...*x509.Certificate) *tls.ConnectionState {
	t.Helper()
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AddCert(ca)
	}
	chains, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatalf("handshake would refuse %s: %v", cert.Subject.CommonName, err)
	}
	return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}, VerifiedChains: chains}
}

// TestRequestHeaderAuthenticator: the front proxy's certificate makes its headers the caller;
// anyone else's headers name no one, and a front-proxy certificate is not a user of its own.
func TestRequestHeaderAuthenticator(t *testing.T) {
	dir := t.TempDir()
	frontProxy, frontProxyCA, proxyCert := testClientCert(t, dir, "front-proxy-ca", "front-proxy-client")
	_, _, otherProxyCert := testClientCert(t, dir, "front-proxy-ca", "someone-else")
	_, clusterCA, adminCert := testClientCert(t, dir, "ca", "admin")
	rh := RequestHeaderAuthenticator{CA: StaticPool{frontProxy}, AllowedNames: []string{"front-proxy-client"},
		UsernameHeaders: []string{"X-Remote-User"}, GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"X-Remote-Extra-"}}
	certs := ClientCertAuthenticator{Roots: StaticCertificates{clusterCA}}
	for _, tc := range []struct {
		name       string
		cert       *x509.Certificate
		headers    map[string][]string
		wantUser   string
		wantGroups []string
		wantExtra  map[string][]string
		wantErr    bool
		// wantCleared: the identity headers are gone after authentication.
		wantCleared bool
		// certUser is who ClientCertAuthenticator makes of the same request.
		certUser string
	}{
		{name: "the front proxy names the user", cert: proxyCert,
			headers:  map[string][]string{"X-Remote-User": {"alice"}, "X-Remote-Group": {"dev", "ops"}, "X-Remote-Extra-Acme.com%2fproject": {"p1"}, "X-Remote-Extra-Scopes": {"a", "b"}},
			wantUser: "alice", wantGroups: []string{"dev", "ops", "system:authenticated"},
			wantExtra: map[string][]string{"acme.com/project": {"p1"}, "scopes": {"a", "b"}}, wantCleared: true},
		{name: "a front-proxy certificate of a name not allowed", cert: otherProxyCert,
			headers: map[string][]string{"X-Remote-User": {"alice"}}, wantErr: true},
		{name: "the front proxy on its own behalf", cert: proxyCert, wantCleared: true},
		{name: "a cluster user's headers name no one", cert: adminCert,
			headers: map[string][]string{"X-Remote-User": {"alice"}, "X-Remote-Group": {"system:masters"}}, certUser: "admin"},
		{name: "no certificate", headers: map[string][]string{"X-Remote-User": {"alice"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "https://skiff/api", nil)
			for k, vs := range tc.headers {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			if tc.cert != nil {
				r.TLS = handshakeState(t, tc.cert, frontProxyCA, clusterCA)
			}
			user, ok, err := rh.AuthenticateRequest(r)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if tc.wantUser == "" {
				if ok {
					t.Fatalf("authenticated as %+v", user)
				}
			} else if !ok || user.Name != tc.wantUser || !slices.Equal(user.Groups, tc.wantGroups) || len(user.Extra) != len(tc.wantExtra) {
				t.Fatalf("user %+v ok=%v; want %s %v %v", user, ok, tc.wantUser, tc.wantGroups, tc.wantExtra)
			}
			for k, v := range tc.wantExtra {
				if !slices.Equal(user.Extra[k], v) {
					t.Errorf("extra %s = %v, want %v", k, user.Extra[k], v)
				}
			}
			cleared := r.Header.Get("X-Remote-User") == "" && r.Header.Get("X-Remote-Group") == "" && r.Header.Get("X-Remote-Extra-Scopes") == ""
			if tc.wantCleared && !cleared {
				t.Errorf("identity headers left on the request: %v", r.Header)
			}
			if !tc.wantCleared && len(tc.headers) > 0 && cleared && !tc.wantErr {
				t.Errorf("another caller's headers were removed: %v", r.Header)
			}
			var certUser string
			if cu, cok, _ := certs.AuthenticateRequest(r); cok {
				certUser = cu.Name
			}
			if certUser != tc.certUser {
				t.Errorf("the client certificate authenticates as %q, want %q", certUser, tc.certUser)
			}
		})
	}
}

// TestClientCertAuthenticatorRootsAndValidity: the verified chain must end in one of Roots, and
// every certificate in it must still be valid when the request arrives, however old the
// connection whose handshake verified it.
func TestClientCertAuthenticatorRootsAndValidity(t *testing.T) {
	dir := t.TempDir()
	_, frontProxyCA, proxyCert := testClientCert(t, dir, "front-proxy-ca", "front-proxy-client")
	_, clusterCA, adminCert := testClientCert(t, dir, "ca", "admin")
	at := func(ts time.Time) func() time.Time { return func() time.Time { return ts } }
	for _, tc := range []struct {
		name     string
		auth     ClientCertAuthenticator
		cert     *x509.Certificate
		wantUser string
	}{
		{name: "cluster CA", auth: ClientCertAuthenticator{Roots: StaticCertificates{clusterCA}}, cert: adminCert, wantUser: "admin"},
		{name: "front-proxy CA is not a cluster root", auth: ClientCertAuthenticator{Roots: StaticCertificates{clusterCA}}, cert: proxyCert},
		{name: "no roots trusts the handshake", auth: ClientCertAuthenticator{}, cert: proxyCert, wantUser: "front-proxy-client"},
		{name: "expired since the handshake", auth: ClientCertAuthenticator{Roots: StaticCertificates{clusterCA}, Now: at(adminCert.NotAfter.Add(time.Second))}, cert: adminCert},
		{name: "not yet valid", auth: ClientCertAuthenticator{Now: at(adminCert.NotBefore.Add(-time.Hour))}, cert: adminCert},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "https://skiff/api", nil)
			r.TLS = handshakeState(t, tc.cert, frontProxyCA, clusterCA)
			user, ok, err := tc.auth.AuthenticateRequest(r)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantUser == "" {
				if ok {
					t.Fatalf("authenticated as %+v", user)
				}
				return
			}
			if !ok || user.Name != tc.wantUser {
				t.Fatalf("user %+v ok=%v, want %s", user, ok, tc.wantUser)
			}
		})
	}
	// A state with no verified chain (the listener did not verify) is no one.
	r := httptest.NewRequest("GET", "https://skiff/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{adminCert}}
	if _, ok, _ := (ClientCertAuthenticator{}).AuthenticateRequest(r); ok {
		t.Fatal("an unverified certificate authenticated")
	}
}
