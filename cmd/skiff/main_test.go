package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/internal/version"
)

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		var stdout, stderr bytes.Buffer
		if err := run([]string{arg}, &stdout, &stderr); err != nil {
			t.Fatalf("skiff %s: %v (%s)", arg, err, stderr.String())
		}
		if got := strings.TrimSpace(stdout.String()); got != version.GitVersion || got == "" {
			t.Errorf("skiff %s printed %q, want %q", arg, got, version.GitVersion)
		}
	}
	var stdout, stderr bytes.Buffer
	if err := run([]string{"frobnicate"}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), `unknown subcommand "frobnicate"`) {
		t.Fatalf("unknown subcommand: %v", err)
	}
}
