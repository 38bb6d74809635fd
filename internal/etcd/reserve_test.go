package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
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

// TestGuardThreshold: the operator's threshold (--etcd-disk-reserve-bytes) is the one the guard
// fences on and sizes its reserve by, not the file system's automatic one.
func TestGuardThreshold(t *testing.T) {
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if free := st.Bavail * uint64(st.Bsize); free < 1<<30 {
		t.Skipf("%d MiB free under %s: the case of a threshold under the free space needs 1 GiB", free>>20, dir)
	}
	step := func(threshold uint64) *SpaceGuard {
		t.Helper()
		clock := testingclock.NewFakeClock(time.Now())
		g := &SpaceGuard{Dir: dir, Threshold: threshold, Clock: clock, Log: slog.New(slog.DiscardHandler)}
		g.lastEtcdCheck = clock.Now() // no etcd here: the disk alone
		g.step(context.Background())
		return g
	}

	g := step(1 << 62) // more than any disk has
	if err := g.FenceError(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("below the %d MiB kept for etcd", uint64(1<<62)>>20)) {
		t.Fatalf("threshold above the free space: fence error %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ReserveFile)); !os.IsNotExist(err) {
		t.Fatalf("a fenced disk got a reserve: %v", err)
	}

	g = step(MinDiskReserve)
	if err := g.FenceError(); err != nil {
		t.Fatalf("threshold of 64 MiB with 1 GiB free: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, ReserveFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(ReserveSize(MinDiskReserve)); fi.Size() != want {
		t.Fatalf("reserve of %d MiB under a 64 MiB threshold, want %d", fi.Size()>>20, want>>20)
	}
}
