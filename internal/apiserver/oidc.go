package apiserver

import (
	"crypto"
	"net/http"

	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// OIDCDiscoveryHandlers serve the service-account issuer's OpenID Connect discovery document and
// its JWKS, as kube-apiserver does. They run behind authentication and authorization like any
// non-resource path: the bootstrap policy's system:service-account-issuer-discovery ClusterRole,
// bound to system:serviceaccounts, lets every service account read them (an admin may bind it to
// system:unauthenticated to publish them). The documents are built once: both are fixed by the
// flags and the key.
func OIDCDiscoveryHandlers(issuer, jwksURI string, keys ...crypto.PublicKey) ([]NonResourceHandler, error) {
	doc, err := serviceaccount.DiscoveryDocument(issuer, jwksURI)
	if err != nil {
		return nil, err
	}
	jwks, err := serviceaccount.JWKS(keys...)
	if err != nil {
		return nil, err
	}
	serve := func(body []byte, contentType string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", contentType)
			// As kube-apiserver: relying parties may cache the documents for an hour.
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body)
		})
	}
	return []NonResourceHandler{
		{Prefix: serviceaccount.DiscoveryPath, Handler: serve(doc, "application/json")},
		{Prefix: serviceaccount.JWKSPath, Handler: serve(jwks, "application/jwk-set+json")},
	}, nil
}
