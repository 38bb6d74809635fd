package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// keyFromJWKS rebuilds the public keys of a JWKS document by kid, as a relying party would.
func keyFromJWKS(t *testing.T, doc []byte) map[string]*ecdsa.PublicKey {
	t.Helper()
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		t.Fatalf("JWKS is not JSON: %v", err)
	}
	out := map[string]*ecdsa.PublicKey{}
	for _, k := range set.Keys {
		if k["kty"] != "EC" || k["crv"] != "P-256" || k["alg"] != "ES256" || k["use"] != "sig" {
			t.Fatalf("unexpected key %v", k)
		}
		x, err1 := base64.RawURLEncoding.DecodeString(k["x"])
		y, err2 := base64.RawURLEncoding.DecodeString(k["y"])
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			t.Fatalf("bad coordinates in %v", k)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			t.Fatalf("key %v is not a P-256 point: %v", k, err)
		}
		out[k["kid"]] = pub
	}
	return out
}

func TestJWKSVerifiesIssuedToken(t *testing.T) {
	key := newKey(t)
	issuer, err := NewIssuer(key, "https://issuer.example")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	token, _, err := issuer.Issue(Request{Namespace: "ns", ServiceAccount: Ref{Name: "sa", UID: "u"}, Audiences: []string{"vault"}, Expiration: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := JWKS(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyFromJWKS(t, doc)
	parsed, err := jwt.Parse(token, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		k, ok := keys[kid]
		if !ok {
			t.Fatalf("token kid %q not in the JWKS %s", kid, doc)
		}
		return k, nil
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer("https://issuer.example"), jwt.WithAudience("vault"))
	if err != nil || !parsed.Valid {
		t.Fatalf("token does not verify with the JWKS: %v", err)
	}
	// Another key does not verify it, and its JWKS names another kid.
	otherKey := &newKey(t).PublicKey
	if _, ok := keyFromJWKS(t, mustJWKS(t, otherKey))[parsed.Header["kid"].(string)]; ok {
		t.Fatal("two keys share a kid")
	}
	if _, err := jwt.Parse(token, func(*jwt.Token) (any, error) { return otherKey, nil }, jwt.WithValidMethods([]string{"ES256"})); err == nil {
		t.Fatal("a foreign key verified the token")
	}
}

func mustJWKS(t *testing.T, k *ecdsa.PublicKey) []byte {
	t.Helper()
	doc, err := JWKS(k)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestDiscoveryDocument(t *testing.T) {
	tests := []struct {
		issuer, jwks string
		wantErr      string
	}{
		{DefaultIssuer, DefaultJWKSURI(DefaultIssuer), ""},
		{"https://example.com/path/", "https://example.com/keys", ""},
		{"http://example.com", "https://example.com/keys", "must be an https URL"},
		{"kubernetes/serviceaccount", "https://example.com/keys", "must be an https URL"},
		{DefaultIssuer, "https://x/keys?a=b", "must be an https URL"},
	}
	for _, tt := range tests {
		doc, err := DiscoveryDocument(tt.issuer, tt.jwks)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("DiscoveryDocument(%q, %q) err = %v, want %q", tt.issuer, tt.jwks, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("DiscoveryDocument(%q, %q): %v", tt.issuer, tt.jwks, err)
		}
		var got map[string]any
		if err := json.Unmarshal(doc, &got); err != nil {
			t.Fatal(err)
		}
		if got["issuer"] != tt.issuer || got["jwks_uri"] != tt.jwks {
			t.Errorf("document %s: issuer or jwks_uri wrong", doc)
		}
		for _, f := range []string{"response_types_supported", "subject_types_supported", "id_token_signing_alg_values_supported"} {
			if _, ok := got[f]; !ok {
				t.Errorf("document %s lacks %s", doc, f)
			}
		}
	}
	if got := DefaultJWKSURI("https://a.b/"); got != "https://a.b/openid/v1/jwks" {
		t.Errorf("DefaultJWKSURI = %q", got)
	}
}
