package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// EnsureBinary returns binary when set; otherwise it builds ./cmd/skiff (from the repository root)
// into a temporary directory, which cleanup removes.
func EnsureBinary(ctx context.Context, binary string, progress io.Writer) (path string, cleanup func(), err error) {
	if binary != "" {
		return binary, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "skiff-bench-bin-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "skiff")
	fmt.Fprintln(progress, "building ./cmd/skiff ...")
	build := exec.CommandContext(ctx, "go", "build", "-o", path, "./cmd/skiff")
	build.Stdout, build.Stderr = progress, progress
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("go build ./cmd/skiff (run from the repository root or pass --skiff): %w", err)
	}
	return path, func() { os.RemoveAll(dir) }, nil
}
