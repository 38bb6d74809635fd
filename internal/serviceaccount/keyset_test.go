package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// swapKeys is a KeySource a test rotates by assigning set.
type swapKeys struct{ set *KeySet }

func (s *swapKeys) KeySet() *KeySet { return s.set }

func mustKeySet(t *testing.T, signing crypto.Signer, retired ...crypto.PublicKey) *KeySet {
	t.Helper()
	s, err := NewKeySet(signing, retired...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tokenKID(t *testing.T, token string) string {
	t.Helper()
	parsed, _, err := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := parsed.Header["kid"].(string)
	return kid
}

// A rotation as the API server sees it: the source's set changes from {old} to {new, old
// retired}, then to {new} when the retired key is pruned.
func TestKeySetRotation(t *testing.T) {
	oldKey, newKey := newKey(t), newKey(t)
	oldKID, _ := KeyID(oldKey.Public())
	newKID, _ := KeyID(newKey.Public())
	src := &swapKeys{set: mustKeySet(t, oldKey)}
	issuer := NewIssuerFrom(src, DefaultIssuer)
	v := NewVerifierFrom(src, DefaultIssuer, []string{DefaultIssuer})
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	req := Request{Namespace: "ns", ServiceAccount: Ref{Name: "default", UID: "u"}, Audiences: []string{DefaultIssuer}, Expiration: time.Hour}
	issue := func() string {
		t.Helper()
		tok, _, err := issuer.Issue(req, now)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	before := issue()
	if got := tokenKID(t, before); got != oldKID {
		t.Fatalf("token before the rotation has kid %q, want the old key's %q", got, oldKID)
	}

	src.set = mustKeySet(t, newKey, oldKey.Public())
	after := issue()
	if got := tokenKID(t, after); got != newKID {
		t.Fatalf("token after the rotation has kid %q, want the new key's %q", got, newKID)
	}
	if got, want := src.set.KeyIDs(), []string{newKID, oldKID}; !slices.Equal(got, want) {
		t.Fatalf("verifying kids %v, want %v (the signing key first)", got, want)
	}
	for name, tok := range map[string]string{"before": before, "after": after} {
		if _, err := v.Verify(tok, now.Add(time.Minute)); err != nil {
			t.Errorf("token issued %s the rotation does not verify with both keys: %v", name, err)
		}
	}
	// The JWKS lists both keys under the kids the tokens carry.
	doc, err := JWKS(src.set.PublicKeys()...)
	if err != nil {
		t.Fatal(err)
	}
	inJWKS := keyFromJWKS(t, doc)
	if _, ok := inJWKS[oldKID]; !ok {
		t.Errorf("JWKS %s lacks the retired key", doc)
	}
	if _, ok := inJWKS[newKID]; !ok {
		t.Errorf("JWKS %s lacks the signing key", doc)
	}

	// Pruned: the old key's tokens no longer verify, the new key's still do.
	src.set = mustKeySet(t, newKey)
	if _, err := v.Verify(before, now.Add(time.Minute)); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("token of a pruned key: err = %v, want a signature error", err)
	}
	if _, err := v.Verify(after, now.Add(time.Minute)); err != nil {
		t.Errorf("token of the signing key after the prune: %v", err)
	}
}

// A token without a kid, or with a kid the set does not know, is tried against every key, as
// kube-apiserver does with its --service-account-key-file list.
func TestKeySetVerifiesWithoutKID(t *testing.T) {
	oldKey, newKey := newKey(t), newKey(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	v := NewVerifierFrom(StaticKeys{mustKeySet(t, newKey, oldKey.Public())}, DefaultIssuer, nil)
	for _, kid := range []any{nil, "unknown-kid"} {
		c := claims{
			RegisteredClaims: jwt.RegisteredClaims{Issuer: DefaultIssuer, Subject: "system:serviceaccount:ns:sa",
				ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
			Kubernetes: KubernetesClaim{Namespace: "ns", ServiceAccount: Ref{Name: "sa"}},
		}
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
		if kid != nil {
			tok.Header["kid"] = kid
		}
		signed, err := tok.SignedString(oldKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(signed, now); err != nil {
			t.Errorf("token of the retired key with kid %v: %v", kid, err)
		}
	}
}

func TestNewKeySet(t *testing.T) {
	signing, retired := newKey(t), newKey(t)
	s := mustKeySet(t, signing, retired.Public(), retired.Public(), signing.Public())
	if got := len(s.KeyIDs()); got != 2 {
		t.Errorf("duplicate keys kept: %d kids %v, want 2", got, s.KeyIDs())
	}
	if s.SigningKeyID() != s.KeyIDs()[0] {
		t.Errorf("signing kid %q is not the first verifying kid %v", s.SigningKeyID(), s.KeyIDs())
	}
	if _, err := NewKeySet(nil); err == nil {
		t.Error("a nil signing key was accepted")
	}
	if _, err := NewKeySet(signing, "not a key"); err == nil {
		t.Error("a retired key that is not ECDSA was accepted")
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewKeySet(p384); err == nil {
		t.Error("a P-384 signing key was accepted for ES256")
	}
	if _, err := NewKeySet(signing, p384.Public()); err == nil {
		t.Error("a P-384 retired key was accepted: the JWKS could not list it")
	}
}
