package kubelet

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRestrictions keeps the kubelet a pure API client: it reaches the
// cluster through client-go only and uses no upstream component code.
func TestImportRestrictions(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/skiff-sh/skiff/internal/kubelet/...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	forbidden := []string{
		"github.com/skiff-sh/skiff/internal/apiserver", "github.com/skiff-sh/skiff/internal/storage",
		"github.com/skiff-sh/skiff/internal/etcd", "github.com/skiff-sh/skiff/internal/registry",
		"github.com/skiff-sh/skiff/internal/cluster", "go.etcd.io/etcd", "k8s.io/kubernetes", "k8s.io/apiserver",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("kubelet depends on %s", dep)
			}
		}
	}
}
