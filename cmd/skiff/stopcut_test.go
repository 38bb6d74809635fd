package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

func TestStopCutErrorsAreLowered(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		level     slog.Level
		wantLevel string // "" means the record is not printed
	}{
		{"cancelled, info level", fmt.Errorf("post: %w", context.Canceled), slog.LevelInfo, ""},
		{"cancelled, debug level", fmt.Errorf("post: %w", context.Canceled), slog.LevelDebug, "DEBUG"},
		{"real error", errors.New("connection refused"), slog.LevelInfo, "ERROR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			base := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})
			logger := slog.New(stopCutHandler{base}).With("component", "klog")
			logger.Error("Error initially creating lease lock", "err", tc.err, "lock", "kube-system/x")
			out := buf.String()
			if tc.wantLevel == "" {
				if out != "" {
					t.Fatalf("printed %q, want nothing", out)
				}
				return
			}
			for _, want := range []string{"level=" + tc.wantLevel, "component=klog", "lock=kube-system/x"} {
				if !strings.Contains(out, want) {
					t.Errorf("output %q lacks %q", out, want)
				}
			}
		})
	}
}

// TestKlogStopCutErrorsAreLowered goes through klog itself, the way client-go's leader election
// logs, so a change in how klog hands errors to slog shows up here.
func TestKlogStopCutErrorsAreLowered(t *testing.T) {
	var buf bytes.Buffer
	logger, err := newLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	_ = logger
	klog.ErrorS(fmt.Errorf("Post \"https://x/leases\": %w", context.Canceled), "Error initially creating lease lock")
	klog.ErrorS(errors.New("boom"), "a real failure")
	klog.Flush()
	out := buf.String()
	if strings.Contains(out, "lease lock") {
		t.Errorf("a stop-cut error was printed at info level: %s", out)
	}
	if !strings.Contains(out, "a real failure") || !strings.Contains(out, `"level":"ERROR"`) {
		t.Errorf("a real error was not printed as ERROR: %s", out)
	}
}
