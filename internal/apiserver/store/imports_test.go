package store

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRestrictions: the store sits between the HTTP layer and storage and imports neither the
// HTTP package nor the cluster; the registry (the store's strategies) imports neither the store nor
// storage (registry/builtin, which composes the built-in resources with their storage codecs and
// discovery, excepted); storage imports nothing of the API server.
func TestImportRestrictions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const module = "github.com/skiff-sh/skiff/internal/"
	listed, err := exec.Command("go", "list", module+"registry/...").CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, listed)
	}
	var registryPackages []string
	for _, pkg := range strings.Fields(string(listed)) {
		if pkg != module+"registry/builtin" {
			registryPackages = append(registryPackages, pkg)
		}
	}
	for _, tt := range []struct {
		packages  string
		forbidden []string // exact packages or prefixes ending in "/"
	}{
		{module + "apiserver/store/...", []string{module + "apiserver", module + "cluster", "k8s.io/apiserver/", "k8s.io/kubernetes/"}},
		{strings.Join(registryPackages, " "), []string{module + "apiserver", module + "apiserver/", module + "storage", module + "storage/"}},
		{module + "storage/...", []string{module + "apiserver", module + "apiserver/"}},
	} {
		out, err := exec.Command("go", append([]string{"list", "-deps"}, strings.Fields(tt.packages)...)...).CombinedOutput()
		if err != nil {
			t.Skipf("go list unavailable: %v: %s", err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range tt.forbidden {
				if dep == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f)) {
					t.Errorf("%s depends on %s", strings.Fields(tt.packages)[0], dep)
				}
			}
		}
	}
}
