package nodelock

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAcquire(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to an open file, so a second open in this process is refused as another
	// process would be.
	if _, err := Acquire(dir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("in use by skiff (pid %d)", os.Getpid())) {
		t.Fatalf("second lock: %v, want it refused naming this process", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil || strings.TrimSpace(string(data)) != fmt.Sprint(os.Getpid()) {
		t.Fatalf("lock file = %q, %v; the refused attempt must not change it", data, err)
	}
	first.Release()
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.Release()
}
