package apiserver

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// RequestHeaderAuthenticator trusts a front proxy (kube-apiserver's --requestheader-* options): a
// request whose client certificate chains to CA and names one of AllowedNames (any name when
// empty) is the user the proxy names in its headers. Headers from any other caller name no one,
// and the identity headers are removed from the request once read, so nothing behind the
// authenticator can mistake them for the caller's own.
type RequestHeaderAuthenticator struct {
	// CA is read at each request, so a front-proxy CA rotated in its bundle is followed without a
	// restart.
	CA                  PoolSource
	AllowedNames        []string
	UsernameHeaders     []string
	GroupHeaders        []string
	ExtraHeaderPrefixes []string
}

func (a RequestHeaderAuthenticator) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	if a.CA == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	if !verifiesClient(r.TLS.PeerCertificates, a.CA.Pool()) {
		return nil, false, nil
	}
	cn := r.TLS.PeerCertificates[0].Subject.CommonName
	if len(a.AllowedNames) > 0 && !slices.Contains(a.AllowedNames, cn) {
		return nil, false, fmt.Errorf("request header client certificate %q is not one of the allowed names %v", cn, a.AllowedNames)
	}
	user := requestHeaderUser(r.Header, a.UsernameHeaders, a.GroupHeaders, a.ExtraHeaderPrefixes)
	a.clear(r.Header)
	if user == nil {
		// The proxy named no one: the request is the proxy's own, anonymous to the cluster.
		return nil, false, nil
	}
	return user, true, nil
}

// requestHeaderUser reads the user the headers name: the first non-empty username header, every
// value of the group headers, and the extras under the prefixes (keys lower-cased and
// URL-unescaped, as upstream encodes them). Nil when no username header is set.
func requestHeaderUser(h http.Header, usernameHeaders, groupHeaders, extraPrefixes []string) *UserInfo {
	var name string
	for _, k := range usernameHeaders {
		if v := strings.TrimSpace(h.Get(k)); v != "" {
			name = v
			break
		}
	}
	if name == "" {
		return nil
	}
	user := &UserInfo{Name: name}
	for _, k := range groupHeaders {
		user.Groups = append(user.Groups, h.Values(k)...)
	}
	if !slices.Contains(user.Groups, "system:authenticated") {
		user.Groups = append(user.Groups, "system:authenticated")
	}
	for header, values := range h {
		for _, prefix := range extraPrefixes {
			if len(header) <= len(prefix) || !strings.EqualFold(header[:len(prefix)], prefix) {
				continue
			}
			key := strings.ToLower(header[len(prefix):])
			if unescaped, err := url.PathUnescape(key); err == nil {
				key = unescaped
			}
			if user.Extra == nil {
				user.Extra = map[string][]string{}
			}
			user.Extra[key] = append(user.Extra[key], values...)
		}
	}
	return user
}

// clear removes the identity headers.
func (a RequestHeaderAuthenticator) clear(h http.Header) {
	for _, k := range append(slices.Clone(a.UsernameHeaders), a.GroupHeaders...) {
		h.Del(k)
	}
	for header := range h {
		for _, prefix := range a.ExtraHeaderPrefixes {
			if len(header) >= len(prefix) && strings.EqualFold(header[:len(prefix)], prefix) {
				h.Del(header)
			}
		}
	}
}

// PoolSource gives a trust pool as it is now: pki.PoolHolder follows its bundle files on disk.
type PoolSource interface {
	Pool() *x509.CertPool
}

// StaticPool is a PoolSource that never changes.
type StaticPool struct{ CertPool *x509.CertPool }

// Pool is the pool.
func (s StaticPool) Pool() *x509.CertPool { return s.CertPool }

// verifiesClient reports whether the peer's certificate chain (leaf first) leads to roots for
// client authentication.
func verifiesClient(chain []*x509.Certificate, roots *x509.CertPool) bool {
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err == nil
}
