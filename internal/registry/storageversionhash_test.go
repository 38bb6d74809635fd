package registry

import "testing"

// TestStorageVersionHash checks the hash against values kube-apiserver v1.33 publishes in
// discovery (apps/v1 deployments) and that upstream's e2e spec recomputes for a CRD.
func TestStorageVersionHash(t *testing.T) {
	for _, tc := range []struct{ group, version, kind, want string }{
		{"apps", "v1", "Deployment", "8aSe+NMegvE="},
		{"stable.example.com", "v1", "CronTab", "EdX2FP+L0js="},
	} {
		if got := StorageVersionHash(tc.group, tc.version, tc.kind); got != tc.want {
			t.Errorf("StorageVersionHash(%s, %s, %s) = %s, want %s", tc.group, tc.version, tc.kind, got, tc.want)
		}
	}
}
