package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"slices"
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

// TestVerifiedExtra: a verified token reports its credential ID and the pod it is bound to, as
// Kubernetes' authenticator does, and two tokens issued at the same instant differ in their ID.
func TestVerifiedExtra(t *testing.T) {
	key := newKey(t)
	issuer, err := NewIssuer(key, DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	req := Request{Namespace: "ns", ServiceAccount: Ref{Name: "default", UID: "sa-uid"}, Expiration: time.Hour, BoundPod: &Ref{Name: "web", UID: "pod-uid"}}
	v := NewVerifier(&key.PublicKey, DefaultIssuer, nil)
	var ids []string
	for range 2 {
		got := issueVerified(t, issuer, v, req, now)
		extra := got.Extra()
		cred := extra["authentication.kubernetes.io/credential-id"]
		if len(cred) != 1 || !strings.HasPrefix(cred[0], "JTI=") || got.ID == "" {
			t.Fatalf("credential id %v (jti %q)", cred, got.ID)
		}
		if extra["authentication.kubernetes.io/pod-name"][0] != "web" || extra["authentication.kubernetes.io/pod-uid"][0] != "pod-uid" {
			t.Fatalf("pod extra %v", extra)
		}
		ids = append(ids, got.ID)
	}
	if ids[0] == ids[1] {
		t.Fatalf("two tokens issued at the same instant share the ID %q", ids[0])
	}
}

// A pod-bound token carries the pod's node: its name always, its UID only when the node existed
// at issue time, and a TokenReview reports exactly those.
func TestVerifiedExtraPodNode(t *testing.T) {
	key := newKey(t)
	issuer, err := NewIssuer(key, DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(&key.PublicKey, DefaultIssuer, nil)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		node    Ref
		wantUID []string
	}{
		{Ref{Name: "n1", UID: "node-uid"}, []string{"node-uid"}},
		{Ref{Name: "gone"}, nil},
	} {
		node := tc.node
		req := Request{Namespace: "ns", ServiceAccount: Ref{Name: "default", UID: "sa-uid"}, Expiration: time.Hour,
			BoundPod: &Ref{Name: "web", UID: "pod-uid"}, BoundNode: &node}
		extra := issueVerified(t, issuer, v, req, now).Extra()
		if name := extra["authentication.kubernetes.io/node-name"]; len(name) != 1 || name[0] != node.Name {
			t.Errorf("node %q: node-name extra %v", node.Name, name)
		}
		if uid := extra["authentication.kubernetes.io/node-uid"]; !slices.Equal(uid, tc.wantUID) {
			t.Errorf("node %q: node-uid extra %v, want %v", node.Name, uid, tc.wantUID)
		}
	}
}

// issueVerified issues a token for req and verifies it, both at now.
func issueVerified(t *testing.T, issuer *Issuer, v *Verifier, req Request, now time.Time) *Verified {
	t.Helper()
	token, _, err := issuer.Issue(req, now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Verify(token, now)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
