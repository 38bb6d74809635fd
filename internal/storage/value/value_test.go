package value

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"
)

func key(n int, b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n)) }

func config(providers string) []byte {
	return []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, "*.apps"]
  providers:
` + providers)
}

func TestProvidersRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, providers, prefix string }{
		{"aesgcm", "  - aesgcm: {keys: [{name: k1, secret: " + key(32, 1) + "}]}\n", "k8s:enc:aesgcm:v1:k1:"},
		{"aescbc", "  - aescbc: {keys: [{name: k1, secret: " + key(16, 2) + "}]}\n", "k8s:enc:aescbc:v1:k1:"},
		{"secretbox", "  - secretbox: {keys: [{name: k1, secret: " + key(32, 3) + "}]}\n", "k8s:enc:secretbox:v1:k1:"},
		{"identity", "  - identity: {}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(config(tc.providers))
			if err != nil {
				t.Fatal(err)
			}
			tr := cfg.For("", "secrets")
			for _, plain := range [][]byte{[]byte("k8s\x00secret-value"), {}, bytes.Repeat([]byte("x"), 4097)} {
				sealed, err := tr.TransformToStorage(plain, "/registry/secrets/ns/a")
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(sealed, []byte(tc.prefix)) {
					t.Fatalf("sealed value %q lacks prefix %q", sealed[:min(len(sealed), 30)], tc.prefix)
				}
				if tc.prefix != "" && len(plain) > 8 && bytes.Contains(sealed, plain) {
					t.Fatal("the plain value is in the sealed one")
				}
				got, stale, err := tr.TransformFromStorage(sealed, "/registry/secrets/ns/a")
				if err != nil || stale || !bytes.Equal(got, plain) {
					t.Fatalf("read back %q stale=%v err=%v", got, stale, err)
				}
			}
		})
	}
}

// TestKeyIsAuthenticated: an AES-GCM value moved under another etcd key does not decrypt.
func TestKeyIsAuthenticated(t *testing.T) {
	cfg, err := Parse(config("  - aesgcm: {keys: [{name: k1, secret: " + key(32, 1) + "}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := cfg.For("", "secrets")
	sealed, _ := tr.TransformToStorage([]byte("v"), "/registry/secrets/ns/a")
	if _, _, err := tr.TransformFromStorage(sealed, "/registry/secrets/ns/b"); err == nil {
		t.Fatal("a value decrypted under another key")
	}
}

// TestRotationReadsOldAndNew: during a rotation both keys read, values of the old key are stale,
// and once the old key is dropped its values no longer read.
func TestRotationReadsOldAndNew(t *testing.T) {
	now := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	first, err := NewSecretboxConfig(now)
	if err != nil {
		t.Fatal(err)
	}
	plainOld, err := Parse(first)
	if err != nil {
		t.Fatal(err)
	}
	oldValue, _ := plainOld.For("", "secrets").TransformToStorage([]byte("old"), "k")
	legacy := []byte("k8s\x00written before encryption")

	prepared, newName, err := PrepareSecretbox(first, now)
	if err != nil {
		t.Fatal(err)
	}
	oldName, _ := WritingKey(first)
	if w, err := WritingKey(prepared); err != nil || w != oldName || w == newName {
		t.Fatalf("a prepared configuration writes with %q (%v); want the old key %s, not the new %s", w, err, oldName, newName)
	}
	rotated, err := PromoteSecretbox(prepared, newName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PromoteSecretbox(prepared, "key-unknown"); err == nil {
		t.Fatal("promoting a key the configuration lacks succeeded")
	}
	during, err := Parse(rotated)
	if err != nil {
		t.Fatal(err)
	}
	tr := during.For("", "secrets")
	newValue, _ := tr.TransformToStorage([]byte("new"), "k")
	if !bytes.HasPrefix(newValue, []byte("k8s:enc:secretbox:v1:"+newName+":")) {
		t.Fatalf("new writes do not use the new key %s: %q", newName, newValue[:40])
	}
	// A server still on the prepared configuration reads what a promoted one sealed.
	preparedCfg, err := Parse(prepared)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := preparedCfg.For("", "secrets").TransformFromStorage(newValue, "k"); err != nil || string(got) != "new" {
		t.Fatalf("the prepared configuration reads the new key's value as %q, %v", got, err)
	}
	for _, tc := range []struct {
		data      []byte
		want      string
		wantStale bool
	}{{oldValue, "old", true}, {newValue, "new", false}, {legacy, string(legacy), true}} {
		got, stale, err := tr.TransformFromStorage(tc.data, "k")
		if err != nil || string(got) != tc.want || stale != tc.wantStale {
			t.Errorf("read %q: got %q stale=%v err=%v; want %q stale=%v", tc.want, got, stale, err, tc.want, tc.wantStale)
		}
	}
	pruned, err := PruneSecretbox(rotated)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Parse(pruned)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := after.For("", "secrets").TransformFromStorage(oldValue, "k"); err == nil {
		t.Fatal("a value of a dropped key still reads")
	}
	if got, _, err := after.For("", "secrets").TransformFromStorage(newValue, "k"); err != nil || string(got) != "new" {
		t.Fatalf("the new key's value: %q %v", got, err)
	}
}

func TestResourceMatching(t *testing.T) {
	cfg, err := Parse([]byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, deployments.apps]
  providers: [{secretbox: {keys: [{name: a, secret: ` + key(32, 1) + `}]}}]
- resources: ["*.batch", "*."]
  providers: [{identity: {}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group, resource string
		want            string
	}{
		{"", "secrets", "sealed"}, {"apps", "deployments", "sealed"}, {"apps", "statefulsets", "none"},
		{"batch", "jobs", "identity"}, {"", "configmaps", "identity"}, {"rbac.authorization.k8s.io", "roles", "none"},
	} {
		tr := cfg.For(tc.group, tc.resource)
		got := "none"
		if tr != nil {
			got = "identity"
			if out, _ := tr.TransformToStorage([]byte("x"), "k"); !bytes.Equal(out, []byte("x")) {
				got = "sealed"
			}
		}
		if got != tc.want {
			t.Errorf("%s.%s: %s, want %s", tc.resource, tc.group, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, providers, want string }{
		{"short aes key", "  - aesgcm: {keys: [{name: k, secret: " + key(7, 1) + "}]}\n", "invalid key size"},
		{"short secretbox key", "  - secretbox: {keys: [{name: k, secret: " + key(16, 1) + "}]}\n", "32 bytes"},
		{"bad base64", "  - aescbc: {keys: [{name: k, secret: '!!'}]}\n", "not base64"},
		{"no keys", "  - aesgcm: {keys: []}\n", "at least one key"},
		{"two kinds", "  - {identity: {}, aesgcm: {keys: [{name: k, secret: " + key(32, 1) + "}]}}\n", "exactly one"},
		{"kms", "  - kms: {name: x}\n", "not supported"},
		{"duplicate name", "  - aesgcm: {keys: [{name: k, secret: " + key(32, 1) + "}, {name: k, secret: " + key(32, 2) + "}]}\n", "used twice"},
		{"unknown field", "  - aesgcm: {keys: [{name: k, secret: " + key(32, 1) + ", extra: 1}]}\n", "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(config(tc.providers))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Parse([]byte("kind: Other\napiVersion: v1\nresources: []\n")); err == nil {
		t.Fatal("a wrong kind was accepted")
	}
}

func TestUnknownPrefixWithoutIdentity(t *testing.T) {
	cfg, err := Parse(config("  - aesgcm: {keys: [{name: k1, secret: " + key(32, 1) + "}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := cfg.For("", "secrets")
	for _, data := range [][]byte{[]byte("k8s\x00plain"), []byte("k8s:enc:aesgcm:v1:other:xxxx")} {
		if _, _, err := tr.TransformFromStorage(data, "k"); err == nil {
			t.Errorf("%q read without a matching provider", data)
		}
	}
}

// FuzzTransformFromStorage: whatever etcd holds, reading it never panics.
func FuzzTransformFromStorage(f *testing.F) {
	cfg, err := Parse(config(fmt.Sprintf("  - aesgcm: {keys: [{name: g, secret: %s}]}\n  - aescbc: {keys: [{name: c, secret: %s}]}\n  - secretbox: {keys: [{name: s, secret: %s}]}\n  - identity: {}\n",
		key(32, 1), key(32, 2), key(32, 3))))
	if err != nil {
		f.Fatal(err)
	}
	tr := cfg.For("", "secrets")
	f.Add([]byte("k8s:enc:aesgcm:v1:g:0123456789abcdef"))
	f.Add([]byte("k8s:enc:aescbc:v1:c:0123456789abcdef0123456789abcdef"))
	f.Add([]byte("k8s:enc:secretbox:v1:s:"))
	f.Add([]byte("k8s\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = tr.TransformFromStorage(data, "k")
	})
}
