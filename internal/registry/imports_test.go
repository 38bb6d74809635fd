package registry

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRegistryDoesNotImportTheHTTPLayer enforces design.md's rule that the registry never imports
// the API server's HTTP layer: strategies that need the requesting user read it through
// internal/apiserver/request.
func TestRegistryDoesNotImportTheHTTPLayer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test=false", "github.com/skiff-sh/skiff/internal/registry/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "github.com/skiff-sh/skiff/internal/apiserver" {
			t.Errorf("registry packages depend on %s", pkg)
		}
	}
}
