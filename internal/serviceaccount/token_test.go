package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"
)

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestIssueAndVerify(t *testing.T) {
	key := newKey(t)
	issuer, err := NewIssuer(key, DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	req := Request{Namespace: "ns", ServiceAccount: Ref{Name: "default", UID: "sa-uid"}, Audiences: []string{DefaultIssuer},
		Expiration: time.Hour, BoundPod: &Ref{Name: "web", UID: "pod-uid"}}
	token, exp, err := issuer.Issue(req, now)
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(now.Add(time.Hour)) {
		t.Fatalf("expiry %v", exp)
	}
	v := NewVerifier(&key.PublicKey, DefaultIssuer, []string{DefaultIssuer})
	got, err := v.Verify(token, now.Add(30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "ns" || got.ServiceAccount.UID != "sa-uid" || got.Claim.Pod == nil || got.Claim.Pod.UID != "pod-uid" {
		t.Fatalf("verified %+v", got)
	}

	cases := []struct {
		name   string
		v      *Verifier
		token  string
		at     time.Time
		notOur bool
	}{
		{"expired", v, token, now.Add(2 * time.Hour), false},
		{"other key", NewVerifier(&newKey(t).PublicKey, DefaultIssuer, nil), token, now, false},
		{"other audience", NewVerifier(&key.PublicKey, DefaultIssuer, []string{"vault"}), token, now, false},
		{"other issuer", NewVerifier(&key.PublicKey, "https://elsewhere", nil), token, now, true},
		{"not a jwt", v, "abc.def", now, true},
		{"tampered", v, token[:len(token)-4] + "AAAA", now, false},
		{"garbage jwt", v, "a.b.c", now, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.v.Verify(tc.token, tc.at)
			if err == nil {
				t.Fatal("accepted")
			}
			if errors.Is(err, ErrNotServiceAccountToken) != tc.notOur {
				t.Fatalf("err %v: not-ours = %v, want %v", err, errors.Is(err, ErrNotServiceAccountToken), tc.notOur)
			}
		})
	}
	if !strings.HasPrefix(token, "eyJ") {
		t.Fatalf("token is not a JWT: %q", token)
	}
}
