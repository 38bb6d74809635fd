package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedObjectsStayUnmutated runs the controller scenarios on a server whose controller manager
// and scheduler read the API server's watch cache in process (one copy of each object, shared by
// every informer) with client-go's cache mutation detector on: every object an informer caches is
// compared each second with a copy taken when it arrived, and the server dies ("cache ... modified",
// with a diff in its log) when any component changed one instead of deep-copying it first.
func TestSharedObjectsStayUnmutated(t *testing.T) {
	// The server inherits the variable; client-go reads it when the process starts.
	t.Setenv("KUBE_CACHE_MUTATION_DETECTOR", "true")
	c := newSimNodeCluster(t)
	t.Run("scenarios", func(t *testing.T) {
		t.Run("node lifecycle", func(t *testing.T) { t.Parallel(); testNodeLifecycle(ctl{c: c, t: t}) })
		t.Run("deployment rollout", func(t *testing.T) { t.Parallel(); testDeploymentRollout(ctl{c: c, t: t}) })
		t.Run("cascading deletion", func(t *testing.T) { t.Parallel(); testCascadingDeletion(ctl{c: c, t: t}) })
		t.Run("namespace deletion", func(t *testing.T) { t.Parallel(); testNamespaceDeletion(ctl{c: c, t: t}) })
		t.Run("job completes", func(t *testing.T) { t.Parallel(); testJob(ctl{c: c, t: t}) })
		t.Run("daemonset", func(t *testing.T) { t.Parallel(); testDaemonSet(ctl{c: c, t: t}) })
		t.Run("statefulset", func(t *testing.T) { t.Parallel(); testStatefulSet(ctl{c: c, t: t}) })
		t.Run("endpoints", func(t *testing.T) { t.Parallel(); testEndpoints(ctl{c: c, t: t}) })
		t.Run("replicationcontroller", func(t *testing.T) { t.Parallel(); testReplicationController(ctl{c: c, t: t}) })
	})
	// The detector panics the whole server: it must still answer, and its log must not hold a diff.
	if out, err := c.kubectlErr("get", "--raw", "/readyz"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("server no longer ready after the scenarios (%v %q); log:\n%s", err, out, c.log())
	}
	if log := c.logAll(); strings.Contains(log, "ALTERED!") || strings.Contains(log, "panic: cache ") {
		t.Fatalf("a component mutated an object from its informer cache:\n%s", c.log())
	}
	if !strings.Contains(c.logAll(), "watch cache in process") {
		t.Fatalf("the controller manager and scheduler did not read the watch cache in process; log:\n%s", c.log())
	}
}

// logAll is the server's whole log.
func (c *cluster) logAll() string {
	data, _ := os.ReadFile(filepath.Join(c.dataDir, "skiff.log"))
	return string(data)
}
