package etcd

import (
	"log/slog"
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

// TestPreallocateDB: the guard gives etcd's database file room past its end that the file
// itself owns (its size unchanged, as bbolt set it), fills the holes bbolt's truncation leaves,
// and does it again once bbolt grew the file or a defragmentation replaced it.
func TestPreallocateDB(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "member", "snap", "db")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &SpaceGuard{Dir: dir, Log: slog.New(slog.DiscardHandler)}
	const room = 4 << 20
	check := func(step string, size int64) {
		t.Helper()
		g.preallocateDB(room)
		fi, err := os.Stat(db)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != size {
			t.Fatalf("%s: size %d, want %d (bbolt's, untouched)", step, fi.Size(), size)
		}
		if allocated := fi.Sys().(*syscall.Stat_t).Blocks * 512; allocated < size+room {
			t.Fatalf("%s: %d bytes allocated, want at least %d: the room past the end is not the file's own", step, allocated, size+room)
		}
	}
	check("first look", 1<<20)
	// bbolt grows the file by truncation: a hole, then room past the new end.
	if err := os.Truncate(db, 8<<20); err != nil {
		t.Fatal(err)
	}
	check("grown", 8<<20)
	// A defragmentation writes a new file in its place.
	if err := os.Rename(db, db+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	check("replaced", 2<<20)
}
