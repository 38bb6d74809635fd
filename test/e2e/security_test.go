package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// curlCode runs curl and answers the HTTP status code and the body.
func curlCode(t *testing.T, args ...string) (string, string) {
	t.Helper()
	out, err := execOutput("curl", append([]string{"-s", "-w", "\n%{http_code}"}, args...)...)
	if err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, out)
	}
	i := strings.LastIndex(out, "\n")
	return strings.TrimSpace(out[i+1:]), out[:i]
}

// TestAnonymousAuth: a request without credentials is system:anonymous, which the bootstrap policy
// lets read health and version and nothing else; bad credentials are 401; --anonymous-auth=false
// refuses every anonymous request with 401.
func TestAnonymousAuth(t *testing.T) {
	c := newCluster(t, "--controllers=clusterrole-aggregation")
	url := "https://127.0.0.1:" + itoa(c.ports[0])
	for _, path := range []string{"/version", "/healthz", "/livez", "/readyz"} {
		// curl -k as the brief's operator would: the CA need not be known to ask for the version.
		code, body := curlCode(t, "-k", url+path)
		if code != "200" {
			t.Errorf("anonymous GET %s = %s %s, want 200", path, code, body)
		}
	}
	_, body := curlCode(t, "-k", url+"/version")
	mustContain(t, body, `"gitVersion"`)
	code, body := curlCode(t, "-k", url+"/api/v1/pods")
	if code != "403" {
		t.Errorf("anonymous /api/v1/pods = %s, want 403", code)
	}
	mustContain(t, body, `"reason":"Forbidden"`, `pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" at the cluster scope`)
	// system:discovery is for authenticated users only, as upstream since 1.14.
	if code, body = curlCode(t, "-k", url+"/apis"); code != "403" {
		t.Errorf("anonymous /apis = %s %s, want 403", code, body)
	}
	if code, _ = curlCode(t, "-k", "-H", "Authorization: Bearer not.a.token", url+"/version"); code != "401" {
		t.Errorf("a bad token on /version = %s, want 401 (never anonymous)", code)
	}

	t.Run("disabled", func(t *testing.T) {
		off := newCluster(t, "--anonymous-auth=false")
		url := "https://127.0.0.1:" + itoa(off.ports[0])
		for _, path := range []string{"/version", "/readyz", "/api/v1/pods"} {
			if code, body := curlCode(t, "-k", url+path); code != "401" || !strings.Contains(body, `"reason":"Unauthorized"`) {
				t.Errorf("--anonymous-auth=false: anonymous %s = %s %s, want 401", path, code, body)
			}
		}
		// The node's own load balancer and clients (certificates) are unaffected.
		if out := off.kubectl("get", "--raw", "/readyz"); strings.TrimSpace(out) != "ok" {
			t.Errorf("admin /readyz = %q", out)
		}
	})
}

// TestServiceAccountIssuerDiscovery: the OIDC discovery document names the configured issuer, the
// JWKS verifies a token the API server issued, service accounts may read both and anonymous
// callers may not.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	const issuer = "https://issuer.skiff.test"
	const jwksURI = "https://keys.skiff.test/openid/v1/jwks"
	c := newCluster(t, "--service-account-issuer="+issuer, "--service-account-jwks-uri="+jwksURI)
	url := "https://127.0.0.1:" + itoa(c.ports[0])
	ca := filepath.Join(c.dataDir, "pki", "ca.crt")
	c.kubectl("create", "serviceaccount", "oidc-reader")
	// The API server takes tokens for its own audience (the issuer); a relying party verifies one
	// issued for it (vault) with the JWKS alone.
	auth := "Authorization: Bearer " + strings.TrimSpace(c.kubectl("create", "token", "oidc-reader", "--duration=1h"))
	token := strings.TrimSpace(c.kubectl("create", "token", "oidc-reader", "--audience=vault", "--duration=1h"))
	var doc map[string]any
	eventually(t, 30*time.Second, func() error {
		code, body := curlCode(t, "--cacert", ca, "-H", auth, url+"/.well-known/openid-configuration")
		if code != "200" {
			return errString(code + " " + body)
		}
		return json.Unmarshal([]byte(body), &doc)
	})
	if doc["issuer"] != issuer || doc["jwks_uri"] != jwksURI {
		t.Errorf("discovery document %v: issuer or jwks_uri wrong", doc)
	}
	code, body := curlCode(t, "--cacert", ca, "-H", auth, url+"/openid/v1/jwks")
	if code != "200" {
		t.Fatalf("/openid/v1/jwks = %s %s", code, body)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal([]byte(body), &set); err != nil || len(set.Keys) == 0 {
		t.Fatalf("JWKS %s: %v", body, err)
	}
	keys := map[string]*ecdsa.PublicKey{}
	for _, k := range set.Keys {
		x, _ := base64.RawURLEncoding.DecodeString(k["x"])
		y, _ := base64.RawURLEncoding.DecodeString(k["y"])
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			t.Fatalf("JWKS key %v is not a P-256 point: %v", k, err)
		}
		keys[k["kid"]] = pub
	}
	parsed, err := jwt.Parse(token, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		if k, ok := keys[kid]; ok {
			return k, nil
		}
		return nil, errString("kid " + kid + " not in the JWKS")
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(issuer), jwt.WithAudience("vault"))
	if err != nil || !parsed.Valid {
		t.Fatalf("the JWKS does not verify the issued token: %v", err)
	}
	if code, _ := curlCode(t, "--cacert", ca, url+"/openid/v1/jwks"); code != "403" {
		t.Errorf("anonymous /openid/v1/jwks = %s, want 403 (only service accounts are bound)", code)
	}
}
