package pki

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A CA rotation puts the old CA and the new one in ca.crt, in either order: the signer is the
// certificate of the key, never simply the first one.
func TestParseCAChoosesTheSignerByItsKeyInABundle(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	oldCert, oldKey, err := GenerateCA("old", now)
	if err != nil {
		t.Fatal(err)
	}
	newCert, newKey, err := GenerateCA("new", now)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, _, err := GenerateCA("other", now)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		bundle     []byte
		key        []byte
		wantSigner string
		wantErr    string
	}{
		{name: "one CA", bundle: oldCert, key: oldKey, wantSigner: "old"},
		{name: "old key, old first", bundle: cat(oldCert, newCert), key: oldKey, wantSigner: "old"},
		{name: "new key, old first", bundle: cat(oldCert, newCert), key: newKey, wantSigner: "new"},
		{name: "new key, new first", bundle: cat(newCert, oldCert), key: newKey, wantSigner: "new"},
		{name: "key of no certificate", bundle: cat(oldCert, otherCert), key: newKey, wantErr: "belongs to the CA key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ca, err := NewCA(tc.bundle, tc.key)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ca.Cert.Subject.CommonName != tc.wantSigner {
				t.Fatalf("signer %q, want %q", ca.Cert.Subject.CommonName, tc.wantSigner)
			}
			if len(ca.Bundle) != strings.Count(string(tc.bundle), "BEGIN CERTIFICATE") {
				t.Fatalf("bundle of %d certificates, file has %s", len(ca.Bundle), tc.bundle)
			}
			// What it issues chains to the signer; Trusts also accepts the other CA's leaves.
			leafPEM, _, err := ca.Issue(Leaf{CommonName: "leaf", Client: true}, now)
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := ParseCertificate(leafPEM)
			if err != nil {
				t.Fatal(err)
			}
			if leaf.CheckSignatureFrom(ca.Cert) != nil || !ca.Signs(leaf) || !ca.Trusts(leaf) {
				t.Fatalf("leaf not signed by the signer %q", tc.wantSigner)
			}
		})
	}
	// A leaf of the other CA of the bundle is trusted, not signed.
	oldCA, err := NewCA(oldCert, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	leafPEM, _, err := oldCA.Issue(Leaf{CommonName: "leaf", Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := ParseCertificate(leafPEM)
	rotated, err := NewCA(cat(newCert, oldCert), newKey)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Signs(leaf) || !rotated.Trusts(leaf) {
		t.Fatalf("old CA's leaf: Signs %v (want false), Trusts %v (want true)", rotated.Signs(leaf), rotated.Trusts(leaf))
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestLoadedCASignsWithTheFilesAsTheyAre: a CA loaded from disk and held (the controller
// manager's CSR signer) signs with the new CA once a rotation writes the new key, without being
// loaded again.
func TestLoadedCASignsWithTheFilesAsTheyAre(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	held, err := LoadOrCreateCA(dir, "ca", "old", now)
	if err != nil {
		t.Fatal(err)
	}
	newCert, newKey, err := GenerateCA("new", now)
	if err != nil {
		t.Fatal(err)
	}
	issuer := func() string {
		t.Helper()
		certPEM, _, err := held.Issue(Leaf{CommonName: "leaf", Client: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := ParseCertificate(certPEM)
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Issuer.CommonName
	}
	write := func(name string, data []byte) {
		t.Helper()
		if err := WriteFileAtomic(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := issuer(); got != "old" {
		t.Fatalf("issuer %q, want old", got)
	}
	// Phase trust: both in the bundle, the old key still signs.
	write("ca.crt", cat(held.CertPEM, newCert))
	if got := issuer(); got != "old" {
		t.Fatalf("after the bundle grew: issuer %q, want old", got)
	}
	// Phase sign: the new key.
	write("ca.key", newKey)
	if got := issuer(); got != "new" {
		t.Fatalf("after the key changed: issuer %q, want new", got)
	}
	// A key caught without its certificate keeps the last signer.
	write("ca.crt", held.CertPEM)
	if got := issuer(); got != "new" {
		t.Fatalf("with a key of no certificate: issuer %q, want the last good signer new", got)
	}
}
