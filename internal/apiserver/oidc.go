package apiserver

import (
	"fmt"
	"net/http"

	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// OIDCDiscoveryHandlers serve the service-account issuer's OpenID Connect discovery document and
// its JWKS, as kube-apiserver does. They run behind authentication and authorization like any
// non-resource path: the bootstrap policy's system:service-account-issuer-discovery ClusterRole,
// bound to system:serviceaccounts, lets every service account read them (an admin may bind it to
// system:unauthenticated to publish them). The discovery document is fixed by the flags; the JWKS
// lists every verifying key keys has at the request (the signing key and the retired ones still
// verifying), so a rotated key shows there without a restart.
func OIDCDiscoveryHandlers(issuer, jwksURI string, keys serviceaccount.KeySource) ([]NonResourceHandler, error) {
	doc, err := serviceaccount.DiscoveryDocument(issuer, jwksURI)
	if err != nil {
		return nil, err
	}
	if _, err := serviceaccount.JWKS(keys.KeySet().PublicKeys()...); err != nil {
		return nil, err
	}
	serve := func(body func() ([]byte, error), contentType string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			b, err := body()
			if err != nil {
				http.Error(w, fmt.Sprintf("service account keys: %v", err), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", contentType)
			// As kube-apiserver: relying parties may cache the documents for an hour.
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(b)
		})
	}
	return []NonResourceHandler{
		{Prefix: serviceaccount.DiscoveryPath, Handler: serve(func() ([]byte, error) { return doc, nil }, "application/json")},
		{Prefix: serviceaccount.JWKSPath, Handler: serve(func() ([]byte, error) {
			return serviceaccount.JWKS(keys.KeySet().PublicKeys()...)
		}, "application/jwk-set+json")},
	}, nil
}
