package cluster

import (
	"fmt"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// serviceAccountIssuer is the issuer of service-account tokens (--service-account-issuer, by
// default Kubernetes' usual one) and the OIDC discovery handlers that publish it with the key
// that verifies its tokens (--service-account-jwks-uri, by default the issuer's /openid/v1/jwks).
func serviceAccountIssuer(cfg *Config, keys serviceaccount.KeySource) (string, []apiserver.NonResourceHandler, error) {
	issuer := cfg.ServiceAccountIssuer
	if issuer == "" {
		issuer = serviceaccount.DefaultIssuer
	}
	jwksURI := cfg.ServiceAccountJWKSURI
	if jwksURI == "" {
		jwksURI = serviceaccount.DefaultJWKSURI(issuer)
	}
	handlers, err := apiserver.OIDCDiscoveryHandlers(issuer, jwksURI, keys)
	if err != nil && cfg.ServiceAccountJWKSURI == "" {
		// An issuer that is not an https URL is valid for tokens; kube-apiserver then serves no
		// discovery either.
		cfg.Logger.Warn("service account issuer discovery not served", "issuer", issuer, "reason", err.Error())
		return issuer, nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("--service-account-jwks-uri: %w", err)
	}
	return issuer, handlers, nil
}
