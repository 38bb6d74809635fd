package controller

import (
	"os/exec"
	"strings"
	"testing"
)

// TestControllersReachTheClusterOnlyThroughClientGo enforces the dependency
// rule of design.md: no controller package may link the API server, storage
// or etcd, ours or upstream's, nor any upstream component's implementation.
func TestControllersReachTheClusterOnlyThroughClientGo(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test=false", "github.com/skiff-sh/skiff/internal/controller/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/skiff-sh/skiff/internal/apiserver",
		"github.com/skiff-sh/skiff/internal/storage",
		"github.com/skiff-sh/skiff/internal/etcd",
		"github.com/skiff-sh/skiff/internal/registry",
		"github.com/skiff-sh/skiff/internal/cluster",
		"k8s.io/apiserver/",
		"k8s.io/kubernetes/",
		"go.etcd.io/etcd/server/",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == strings.TrimSuffix(f, "/") || strings.HasPrefix(pkg, f) || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("controller packages depend on %s", pkg)
			}
		}
	}
}
