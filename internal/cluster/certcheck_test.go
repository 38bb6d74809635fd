package cluster

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/pki"
)

// TestCertCheckerLogsExpiringAndRenewed: one check names the certificate that expires within 30
// days; after skiff renews it, the next check says so and warns no more.
func TestCertCheckerLogsExpiringAndRenewed(t *testing.T) {
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "pki")
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(dir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pki.Leaf{CommonName: "apiserver", Server: true}
	// Issued long ago: its year is nearly over.
	if _, _, err := ca.EnsureLeaf(dir, "apiserver", leaf, now.Add(-350*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg := &Config{DataDir: dataDir, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	c := newCertChecker(cfg, clocktesting.NewFakeClock(now))
	c.check()
	first := logs.String()
	if !strings.Contains(first, `msg="certificate expires within 30 days" component=pki name=apiserver`) || strings.Contains(first, "name=ca") {
		t.Fatalf("first check logged:\n%s", first)
	}
	logs.Reset()
	// The renewal skiff does at start.
	if _, _, err := ca.EnsureLeaf(dir, "apiserver", leaf, now); err != nil {
		t.Fatal(err)
	}
	c.check()
	second := logs.String()
	if !strings.Contains(second, `msg="certificate renewed" component=pki name=apiserver`) || strings.Contains(second, "expires within") {
		t.Fatalf("check after the renewal logged:\n%s", second)
	}
	logs.Reset()
	c.check()
	if strings.Contains(logs.String(), "level=INFO") || strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("a check with nothing new logged:\n%s", logs.String())
	}
}
