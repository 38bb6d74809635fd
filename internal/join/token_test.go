package join

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)

func TestNewTokenShape(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ParseBearer(tok.String()); !ok {
			t.Fatalf("token %q does not parse as a bootstrap token", tok)
		}
		seen[tok.ID] = true
	}
	if len(seen) < 2 {
		t.Fatal("tokens are not random")
	}
}

func TestParseJoinToken(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	good := "K10" + hash + "::abcdef.0123456789abcdef"
	jt, err := ParseJoinToken(good)
	if err != nil || jt.CAHash != hash || jt.Token.ID != "abcdef" || jt.Token.Secret != "0123456789abcdef" || jt.String() != good {
		t.Fatalf("ParseJoinToken(%q) = %+v, %v", good, jt, err)
	}
	for _, bad := range []string{
		"abcdef.0123456789abcdef",                       // no pin
		"K10" + hash[:10] + "::abcdef.0123456789abcdef", // short hash
		"K10" + hash + "::ABCDEF.0123456789abcdef",      // upper case id
		"K10" + hash + "::abcdef.0123",                  // short secret
		"K10" + hash + "abcdef.0123456789abcdef",        // no separator
	} {
		if _, err := ParseJoinToken(bad); err == nil {
			t.Errorf("ParseJoinToken(%q) accepted", bad)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	valid, err := NewSecret(tok, SecretOptions{TTL: time.Hour, Description: "d", ExtraGroups: []string{DefaultNodeGroup}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	noAuth := valid.DeepCopy()
	noAuth.Data[keyUsageAuth] = []byte("false")
	badExp := valid.DeepCopy()
	badExp.Data[keyExpiration] = []byte("tomorrow")
	never, _ := NewSecret(tok, SecretOptions{}, t0)
	cases := []struct {
		name    string
		secret  *corev1.Secret
		tok     Token
		now     time.Time
		wantErr error
	}{
		{name: "valid", secret: valid, tok: tok, now: t0.Add(time.Minute)},
		{name: "never expires", secret: never, tok: tok, now: t0.Add(1000 * time.Hour)},
		{name: "deleted", secret: nil, tok: tok, now: t0, wantErr: ErrTokenNotFound},
		{name: "wrong secret", secret: valid, tok: Token{ID: "abcdef", Secret: "0123456789abcdeX"}, now: t0, wantErr: ErrTokenInvalid},
		{name: "expired", secret: valid, tok: tok, now: t0.Add(time.Hour), wantErr: ErrTokenExpired},
		{name: "unparsable expiration", secret: badExp, tok: tok, now: t0, wantErr: ErrTokenExpired},
		{name: "not for authentication", secret: noAuth, tok: tok, now: t0, wantErr: ErrTokenUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			user, err := Authenticate(c.secret, c.tok, c.now)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if user.Name != "system:bootstrap:abcdef" || !slices.Contains(user.Groups, BootstrappersGroup) || !slices.Contains(user.Groups, "system:authenticated") {
				t.Fatalf("user = %+v", user)
			}
		})
	}
	if u, _ := Authenticate(valid, tok, t0); !slices.Contains(u.Groups, DefaultNodeGroup) {
		t.Fatalf("extra group missing: %v", u.Groups)
	}
}

func TestSecretShape(t *testing.T) {
	s, err := NewSecret(Token{ID: "abcdef", Secret: "0123456789abcdef"}, SecretOptions{TTL: 24 * time.Hour, Description: "for n1", ExtraGroups: []string{DefaultNodeGroup}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "bootstrap-token-abcdef" || s.Namespace != "kube-system" || s.Type != "bootstrap.kubernetes.io/token" {
		t.Fatalf("secret meta = %s/%s %s", s.Namespace, s.Name, s.Type)
	}
	want := map[string]string{
		"token-id": "abcdef", "token-secret": "0123456789abcdef", "expiration": "2026-11-25T06:00:00Z",
		"usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
		"auth-extra-groups": DefaultNodeGroup, "description": "for n1",
	}
	for k, v := range want {
		if string(s.Data[k]) != v {
			t.Errorf("data[%s] = %q, want %q", k, s.Data[k], v)
		}
	}
	info, ok := InfoFromSecret(s)
	if !ok || info.ID != "abcdef" || info.Expires == nil || !info.Expires.Equal(t0.Add(24*time.Hour)) || info.Description != "for n1" {
		t.Fatalf("info = %+v", info)
	}
	if _, err := NewSecret(Token{ID: "abcdef", Secret: "0123456789abcdef"}, SecretOptions{ExtraGroups: []string{"system:masters"}}, t0); err == nil {
		t.Fatal("an extra group outside system:bootstrappers: was accepted")
	}
}

func TestAuthenticatorOnlyClaimsBootstrapTokens(t *testing.T) {
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	sec, _ := NewSecret(tok, SecretOptions{TTL: time.Hour}, t0)
	a := Authenticator{Clock: clocktesting.NewFakePassiveClock(t0), Lookup: func(_ context.Context, name string) (*corev1.Secret, error) {
		if name == sec.Name {
			return sec, nil
		}
		return nil, nil
	}}
	for _, c := range []struct {
		header string
		ok     bool
		err    bool
	}{
		{"", false, false},
		{"Bearer eyJhbGciOiJSUzI1NiJ9.x.y", false, false},
		{"Bearer " + tok.String(), true, false},
		{"Bearer abcdef.0000000000000000", false, true},
		{"Bearer zzzzzz.0123456789abcdef", false, true},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		user, ok, err := a.AuthenticateRequest(r)
		if ok != c.ok || (err != nil) != c.err {
			t.Errorf("%q: ok=%v err=%v", c.header, ok, err)
		}
		if ok && user.Name != "system:bootstrap:abcdef" {
			t.Errorf("%q: user %s", c.header, user.Name)
		}
	}
}

func TestCAHashIsTheSPKIHash(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: t0, NotAfter: t0.Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	cert, _ := x509.ParseCertificate(der)
	// The same key in another certificate pins the same: the hash is of the public key only.
	tmpl.SerialNumber = big.NewInt(2)
	der2, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	cert2, _ := x509.ParseCertificate(der2)
	if h := CAHash(cert); len(h) != 64 || h != CAHash(cert2) {
		t.Fatalf("hash %q vs %q", h, CAHash(cert2))
	}
}
