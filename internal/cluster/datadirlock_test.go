package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to an open file, so a second open in this process is refused as another
	// process would be.
	if _, err := lockDataDir(dir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("in use by skiff (pid %d)", os.Getpid())) {
		t.Fatalf("second lock: %v, want it refused naming this process", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, dataDirLockFile))
	if err != nil || strings.TrimSpace(string(data)) != fmt.Sprint(os.Getpid()) {
		t.Fatalf("lock file = %q, %v; the refused attempt must not change it", data, err)
	}
	first.release()
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.release()
}
