package pki

import (
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
