package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProtectPluginsConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no files", Config{}, ""},
		{"good files", Config{SecurityConfig: SecurityConfig{
			ImagePolicyFile: write("images.yaml", "kind: ImagePolicy\ndefault:\n  allow: [registry.k8s.io]\n"),
			PodSecurityConfigFile: write("psa.yaml", "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"+
				"defaults:\n  enforce: baseline\n  warn: restricted\nexemptions:\n  namespaces: [kube-system]\n"),
		}}, ""},
		{"missing image policy", Config{SecurityConfig: SecurityConfig{ImagePolicyFile: filepath.Join(dir, "nope.yaml")}}, "image policy admission"},
		{"bad image policy", Config{SecurityConfig: SecurityConfig{ImagePolicyFile: write("bad-images.yaml", "default: {allowed: [x]}\n")}}, "image policy admission"},
		{"bad pod security level", Config{SecurityConfig: SecurityConfig{PodSecurityConfigFile: write("bad-psa.yaml", "defaults:\n  enforce: strict\n")}}, "must be one of privileged, baseline, restricted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newProtectPlugins(&tt.cfg)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestAdmissionOrder: StorageObjectInUseProtection and PersistentVolumeClaimResize follow DefaultStorageClass; LimitRanger, PodSecurity
// and the image policy sit with the built-in plugins, ResourceQuota comes after the webhooks and
// policies, as upstream orders them.
func TestAdmissionOrder(t *testing.T) {
	chain, err := newAdmission(&Config{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range chain.plugins() {
		names = append(names, p.Name())
	}
	got := strings.Join(names, ",")
	want := "NamespaceLifecycle,ServiceAccount,DefaultTolerationSeconds,Priority,RuntimeClass,DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,LimitRanger,PodSecurity,ImagePolicy," +
		"MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,ResourceQuota"
	if got != want {
		t.Errorf("chain\n got %s\nwant %s", got, want)
	}
}
