package scheduler

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRestrictions: the scheduler reaches the cluster only through client-go.
func TestImportRestrictions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/skiff-sh/skiff/internal/scheduler/...").CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	forbidden := []string{
		"github.com/skiff-sh/skiff/internal/apiserver", "github.com/skiff-sh/skiff/internal/storage",
		"github.com/skiff-sh/skiff/internal/etcd", "github.com/skiff-sh/skiff/internal/cluster",
		"go.etcd.io/", "k8s.io/apiserver/", "k8s.io/kubernetes/",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("scheduler depends on %s", dep)
			}
		}
	}
}
