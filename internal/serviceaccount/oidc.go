package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// OpenID Connect discovery for the service-account issuer: the documents kube-apiserver serves at
// /.well-known/openid-configuration and /openid/v1/jwks, so that a relying party outside the
// cluster can verify the cluster's service-account tokens. Both are pure functions of the issuer,
// the JWKS URI and the public key.

// OIDC discovery paths.
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/openid/v1/jwks"
)

// KeyID is the "kid" of a public key: the unpadded base64url SHA-256 of its PKIX encoding, as
// kube-apiserver names its service-account keys.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encode service account public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// DefaultJWKSURI is where the discovery document points when no --service-account-jwks-uri is
// given: the issuer's own /openid/v1/jwks.
func DefaultJWKSURI(issuer string) string {
	return strings.TrimSuffix(issuer, "/") + JWKSPath
}

// discoveryDocument is the provider metadata kube-apiserver publishes.
type discoveryDocument struct {
	Issuer                           string   `json:"issuer"`
	JWKSURI                          string   `json:"jwks_uri"`
	ResponseTypesSupported           []string `json:"response_types_supported"`
	SubjectTypesSupported            []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported []string `json:"id_token_signing_alg_values_supported"`
}

// DiscoveryDocument is the JSON of /.well-known/openid-configuration. The issuer and the JWKS
// URI must be https URLs (OIDC requires it, and kube-apiserver refuses other issuers for
// discovery); the issuer may have a path but no query or fragment.
func DiscoveryDocument(issuer, jwksURI string) ([]byte, error) {
	if err := checkHTTPSURL("service account issuer", issuer); err != nil {
		return nil, err
	}
	if err := checkHTTPSURL("service account JWKS URI", jwksURI); err != nil {
		return nil, err
	}
	return json.Marshal(discoveryDocument{
		Issuer: issuer, JWKSURI: jwksURI,
		ResponseTypesSupported:           []string{"id_token"},
		SubjectTypesSupported:            []string{"public"},
		IDTokenSigningAlgValuesSupported: []string{"ES256"},
	})
}

func checkHTTPSURL(what, s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%s %q: %w", what, s, err)
	}
	if u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%s %q must be an https URL without query or fragment", what, s)
	}
	return nil
}

// jwk is one JSON Web Key (RFC 7517) of an EC P-256 public key.
type jwk struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv"`
	Alg string `json:"alg"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// JWKS is the JSON of /openid/v1/jwks: the public keys that verify the issuer's tokens.
func JWKS(keys ...crypto.PublicKey) ([]byte, error) {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: []jwk{}}
	for _, k := range keys {
		ec, ok := k.(*ecdsa.PublicKey)
		if !ok || ec.Curve != elliptic.P256() {
			return nil, fmt.Errorf("service account public key must be ECDSA P-256, got %T", k)
		}
		kid, err := KeyID(ec)
		if err != nil {
			return nil, err
		}
		// The uncompressed point is 0x04 || X || Y, each 32 bytes for P-256.
		raw, err := ec.Bytes()
		if err != nil {
			return nil, fmt.Errorf("encode service account public key: %w", err)
		}
		set.Keys = append(set.Keys, jwk{
			Use: "sig", Kty: "EC", Kid: kid, Crv: "P-256", Alg: "ES256",
			X: base64.RawURLEncoding.EncodeToString(raw[1:33]),
			Y: base64.RawURLEncoding.EncodeToString(raw[33:65]),
		})
	}
	return json.Marshal(set)
}
