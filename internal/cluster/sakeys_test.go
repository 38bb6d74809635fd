package cluster

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// saDataDir is a control plane's data dir with only its service-account key.
func saDataDir(t *testing.T) string {
	t.Helper()
	dataDir := t.TempDir()
	if _, err := pki.LoadOrCreateKey(filepath.Join(dataDir, "pki", saKeyFile)); err != nil {
		t.Fatal(err)
	}
	return dataDir
}

func headerKID(t *testing.T, token string) string {
	t.Helper()
	parsed, _, err := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := parsed.Header["kid"].(string)
	return kid
}

// The running API server's holder takes a rotation made by another process (the files) at its
// next use: it signs with the new key, verifies with both, and after a prune with the new only.
func TestSAKeyHolderFollowsRotation(t *testing.T) {
	dataDir := saDataDir(t)
	holder, err := newSAKeyHolder(filepath.Join(dataDir, "pki"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	issuer := serviceaccount.NewIssuerFrom(holder, serviceaccount.DefaultIssuer)
	verifier := serviceaccount.NewVerifierFrom(holder, serviceaccount.DefaultIssuer, nil)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	issue := func() string {
		t.Helper()
		tok, _, err := issuer.Issue(serviceaccount.Request{Namespace: "ns", ServiceAccount: serviceaccount.Ref{Name: "sa"}, Expiration: time.Hour}, now)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	oldKID := holder.KeySet().SigningKeyID()
	before := issue()

	r, err := RotateSAKey(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if r.OldKeyID != oldKID || r.NewKeyID == oldKID || !slices.Equal(r.Verifying, []string{r.NewKeyID, oldKID}) {
		t.Fatalf("rotation %+v: want old %s replaced, both verifying", r, oldKID)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "pki", retiredSAKeyName(oldKID))); err != nil {
		t.Fatalf("retired key file: %v", err)
	}
	after := issue()
	if got := headerKID(t, after); got != r.NewKeyID {
		t.Fatalf("token after the rotation signed by %q, want the new key %q", got, r.NewKeyID)
	}
	if got := holder.KeySet().KeyIDs(); !slices.Equal(got, r.Verifying) {
		t.Fatalf("holder verifies with %v, want %v", got, r.Verifying)
	}
	for name, tok := range map[string]string{"before": before, "after": after} {
		if _, err := verifier.Verify(tok, now); err != nil {
			t.Errorf("token issued %s the rotation: %v", name, err)
		}
	}

	// A second rotation keeps both earlier keys verifying.
	r2, err := RotateSAKey(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Verifying) != 3 || r2.Verifying[0] != r2.NewKeyID {
		t.Fatalf("second rotation verifies with %v, want the new key then both retired", r2.Verifying)
	}

	p, err := PruneRetiredSAKeys(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(p.Pruned); got != 2 {
		t.Fatalf("pruned %v, want both retired keys", p.Pruned)
	}
	if got := holder.KeySet().KeyIDs(); !slices.Equal(got, []string{r2.NewKeyID}) {
		t.Fatalf("after the prune the holder verifies with %v, want only %s", got, r2.NewKeyID)
	}
	if _, err := verifier.Verify(before, now); err == nil {
		t.Error("a token of a pruned key still verifies")
	}
}

// A retired key that cannot be read (damaged by hand) is refused by the rotation's reader, and a
// holder that already runs keeps the set it had instead of losing every key.
func TestSAKeyHolderKeepsKeysOnBadReload(t *testing.T) {
	dataDir := saDataDir(t)
	dir := filepath.Join(dataDir, "pki")
	if _, err := RotateSAKey(dataDir); err != nil {
		t.Fatal(err)
	}
	holder, err := newSAKeyHolder(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	want := holder.KeySet().KeyIDs()
	if err := pki.WriteFileAtomic(filepath.Join(dir, saRetiredPrefix+"broken"+saRetiredSuffix), []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := holder.KeySet().KeyIDs(); !slices.Equal(got, want) {
		t.Fatalf("after a bad reload the holder has %v, want the loaded %v", got, want)
	}
	if _, err := RotateSAKey(dataDir); err == nil {
		t.Error("rotation over a damaged retired key succeeded")
	}
	if _, err := RotateSAKey(t.TempDir()); err == nil {
		t.Error("rotation without a service-account key succeeded")
	}
}
