package join

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/authz/bootstrappolicy"
)

// The retired service-account keys travel with the shared keys: read from the first control
// plane's pki directory, uploaded to the keys Secret, written into a joining node's pki directory
// (so it verifies tokens of a rotated-out key); a pruned key leaves the Secret at the next upload.
func TestKeysCarryRetiredSAKeys(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"ca.crt": "ca cert", "ca.key": "ca key", "sa.key": "sa key",
		"sa-retired-kid1.pub": "retired 1", "sa-retired-kid2.pub": "retired 2",
		"sa-retired-kid3.pem": "not a retired key name",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := ReadKeys(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys.RetiredSAKeys) != 2 || string(keys.RetiredSAKeys["sa-retired-kid1.pub"]) != "retired 1" {
		t.Fatalf("retired keys read %v, want kid1 and kid2", keys.RetiredSAKeys)
	}
	ctx := context.Background()
	client := fake.NewClientset()
	if err := UploadKeys(ctx, client, keys); err != nil {
		t.Fatal(err)
	}
	secret := func() map[string][]byte {
		t.Helper()
		s, err := client.CoreV1().Secrets(SecretNamespace).Get(ctx, bootstrappolicy.ClusterKeysSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Data
	}
	fetched := keysFromSecret(secret())
	dst := t.TempDir()
	if err := fetched.Write(dst); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sa.key", "sa-retired-kid1.pub", "sa-retired-kid2.pub"} {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != files[name] {
			t.Errorf("joining node's %s = %q, %v; want %q", name, got, err, files[name])
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "sa-retired-kid3.pem")); err == nil {
		t.Error("a file that is not a retired key was carried")
	}

	// Pruned on the first node: the next upload drops it from the Secret.
	if err := os.Remove(filepath.Join(src, "sa-retired-kid1.pub")); err != nil {
		t.Fatal(err)
	}
	if keys, err = ReadKeys(src); err != nil {
		t.Fatal(err)
	}
	if err := UploadKeys(ctx, client, keys); err != nil {
		t.Fatal(err)
	}
	if got := keysFromSecret(secret()).RetiredSAKeys; len(got) != 1 || got["sa-retired-kid2.pub"] == nil {
		t.Errorf("after a prune the Secret carries %v, want only kid2", got)
	}

	bad := Keys{RetiredSAKeys: map[string][]byte{"../sa-retired-x.pub": []byte("x")}}
	if err := bad.Write(t.TempDir()); err == nil {
		t.Error("a retired key name with a path was written")
	}
}

// An etcd CA rotation's files travel as etcd-ca.* and etcd-ca-next.* in the keys Secret (a
// Secret's keys hold no "/") and land as etcd/ca.* and etcd/ca-next.* on the other side, both
// through PublishCAFiles/CAFilesOf and through the keys a joining control plane writes.
func TestEtcdCAFilesInTheKeysSecret(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"ca.crt": "ca cert", "ca.key": "ca key", "sa.key": "sa key",
		"etcd/ca.crt": "etcd bundle", "etcd/ca.key": "etcd key", "etcd/ca-next.crt": "next cert", "etcd/ca-next.key": "next key",
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := ReadKeys(src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	client := fake.NewClientset()
	if err := UploadKeys(ctx, client, keys); err != nil {
		t.Fatal(err)
	}
	s, err := client.CoreV1().Secrets(SecretNamespace).Get(ctx, bootstrappolicy.ClusterKeysSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"etcd-ca.crt": "etcd bundle", "etcd-ca-next.key": "next key"} {
		if got := string(s.Data[key]); got != want {
			t.Errorf("Secret key %s = %q, want %q", key, got, want)
		}
	}
	ca, found := CAFilesOf(s.Data, "etcd/ca", "etcd/ca-next")
	if !found || string(ca.Cert) != "etcd bundle" || string(ca.NextKey) != "next key" {
		t.Fatalf("CAFilesOf(etcd/ca) = %+v, %v", ca, found)
	}
	dst := t.TempDir()
	if err := keysFromSecret(s.Data).Write(dst); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd/ca.crt", "etcd/ca-next.crt", "etcd/ca-next.key"} {
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != files[name] {
			t.Errorf("joining node's %s = %q, %v; want %q", name, got, err, files[name])
		}
	}
	// The sign phase removes the next CA: published without it, it leaves the Secret.
	ca.NextCert, ca.NextKey = nil, nil
	if _, err := PublishCAFiles(ctx, client, "etcd/ca", "etcd/ca-next", ca); err != nil {
		t.Fatal(err)
	}
	s, err = client.CoreV1().Secrets(SecretNamespace).Get(ctx, bootstrappolicy.ClusterKeysSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, left := s.Data["etcd-ca-next.crt"]; left {
		t.Error("etcd-ca-next.crt stayed in the Secret after a publish without it")
	}
}
