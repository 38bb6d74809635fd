package etcd

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestMakeReserve: the reserve's blocks are allocated (removing a sparse file would free
// nothing), and a second make replaces it whole.
func TestMakeReserve(t *testing.T) {
	path := filepath.Join(t.TempDir(), ReserveFile)
	const size = 4 << 20
	for range 2 {
		if err := makeReserve(path, size); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != size {
			t.Fatalf("size %d, want %d", fi.Size(), size)
		}
		if allocated := fi.Sys().(*syscall.Stat_t).Blocks * 512; allocated < size {
			t.Fatalf("%d bytes allocated of %d: the reserve is sparse", allocated, size)
		}
		if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
			t.Fatalf("temporary file left: %v", err)
		}
	}
}
