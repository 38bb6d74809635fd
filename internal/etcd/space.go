package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"
)

// DiskReserve is the free space an embedded member's file system keeps for etcd itself: a
// twentieth of the file system, but at least one preallocated WAL segment (64 MiB) and at most
// 1 GiB (room for several segments and a snapshot; 5% of a 250 GB disk would refuse writes with
// 12 GB still free). Below it writes are refused, so that etcd never meets a full disk (it exits
// when a WAL write fails).
func DiskReserve(total uint64) uint64 { return min(max(MinDiskReserve, total/20), 1<<30) }

// MinDiskReserve is the least free space an operator may keep for etcd
// (--etcd-disk-reserve-bytes): one preallocated WAL segment.
const MinDiskReserve = 64 << 20

// SpaceDecision is what to do about disk space now.
type SpaceDecision struct {
	// Fence refuses writes (reads and deletes go on).
	Fence bool
	// Reason says why, for /readyz and the logs.
	Reason string
}

// DecideSpace fences writes when free space falls under reserve (the threshold: DiskReserve or
// the operator's) and lifts the fence once twice the reserve is free again (so a write at the
// edge does not flap it).
func DecideSpace(free, reserve uint64, fenced bool) SpaceDecision {
	switch {
	case free < reserve, fenced && free < 2*reserve:
		return SpaceDecision{Fence: true, Reason: fmt.Sprintf("NOSPACE: %d MiB free on etcd's disk, below the %d MiB kept for etcd: writes are refused until %d MiB are free", free>>20, reserve>>20, (2*reserve)>>20)}
	default:
		return SpaceDecision{}
	}
}

// ReserveFile is the file in an embedded member's data dir that holds disk space back for etcd
// itself. The fence refuses API writes, but etcd commits on its own too (lease revocations,
// compaction) and exits when a commit meets a full disk ("failed to commit tx"); another process
// can take the last free byte between two looks at the disk (dd fills hundreds of MiB in a
// fraction of a second). The reserve is released the moment free space falls under the fence's
// threshold, so etcd's own commits still fit while API writes are refused, and is made again
// once the space is back.
const ReserveFile = "reserve"

// ReserveSize is the size of the reserve under a fence's threshold: an eighth of it, at least
// 16 MiB (more than etcd's background commits write between a fence and an operator's cleanup:
// lease revocations and compactions are small, a WAL segment is preallocated ahead) and at most
// 128 MiB (the automatic 1 GiB threshold of a large disk). It follows the threshold rather than
// the disk so that an operator who keeps less for etcd also holds less back.
func ReserveSize(threshold uint64) uint64 { return min(max(16<<20, threshold/8), 128<<20) }

// ReserveAction is what to do with the reserve now.
type ReserveAction int

const (
	// KeepReserve leaves the reserve as it is (present or not).
	KeepReserve ReserveAction = iota
	// ReleaseReserve deletes it: free space fell under the fence's threshold.
	ReleaseReserve
	// CreateReserve makes it: there is room for it and for the fence to stay down afterwards.
	CreateReserve
)

// DecideReserve releases the reserve (have) the moment free space falls under the fence's
// threshold, and makes it again only once free space would still be above the fence's lifting
// point (twice the threshold) with the reserve taken out, so that making it never raises the
// fence and releasing it never lowers it.
func DecideReserve(free, threshold uint64, have bool) ReserveAction {
	switch {
	case have && free < threshold:
		return ReleaseReserve
	case !have && free >= 2*threshold+ReserveSize(threshold):
		return CreateReserve
	default:
		return KeepReserve
	}
}

// FenceFree is the free space the fence decides on: what the file system reports (free), less
// the reserve while it is released and the fence is down. The reserve's space is etcd's whether
// the file holds it or etcd already writes into it, so releasing the reserve must not keep the
// fence down (a release at 49 MiB free on a 400 MiB disk once read as 65 MiB, above the 64 MiB
// threshold, and let API writes run into the last blocks). Once the fence is up it lifts on the
// file system's own figure, at twice the threshold as documented; the reserve is made again at
// that point plus its size, and until then a fence that is down still counts it out, which stays
// above the threshold (twice the threshold less the reserve), so nothing flaps.
func FenceFree(free, threshold uint64, haveReserve, fenced bool) uint64 {
	if haveReserve || fenced {
		return free
	}
	return free - min(free, ReserveSize(threshold))
}

// SpaceGuard watches the disk under an embedded member's data dir, refuses writes (FenceError)
// before it is full, keeps a reserve for etcd's own commits there (ReserveFile), and clears a
// NOSPACE alarm of etcd's own once the database fits its quota again, defragmenting the member
// first when most of its file is free pages.
type SpaceGuard struct {
	Dir    string
	Client *clientv3.Client
	// Endpoint is the local member's client URL (defragmentation and status are per member).
	Endpoint string
	Quota    int64
	// Threshold is the free space below which writes are refused; 0: DiskReserve of the file
	// system (--etcd-disk-reserve-bytes).
	Threshold uint64
	Clock     clock.WithTicker
	Log       *slog.Logger

	fence atomic.Pointer[string]
	// preallocated is the database file as the guard last preallocated room past its end.
	preallocated dbFile
	// lastDefrag is when the member was last defragmented, lastEtcdCheck when the member's
	// alarms and status were last asked for (step runs on one goroutine).
	lastDefrag, lastEtcdCheck time.Time
}

// defragInterval and defragWaste decide the periodic defragmentation: at most hourly, when at
// least half of the member's file (and 64 MiB) is free pages that compaction left behind.
const (
	defragInterval = time.Hour
	defragWaste    = 64 << 20
)

// etcdCheckInterval spaces the guard's calls to etcd (alarm list, member status) out more than
// the disk check: the disk is read every tick because a filling disk is urgent, while the quota
// alarm and defragmentation are not, and without quorum an alarm list blocks for seconds.
const etcdCheckInterval = 15 * time.Second

// EtcdCheckDue reports whether the guard should ask etcd for alarms and status again, sinceLast
// after it last did.
func EtcdCheckDue(sinceLast time.Duration) bool { return sinceLast >= etcdCheckInterval }

// NeedsDefrag reports whether a member whose file is dbSize bytes, inUse of them live, should be
// defragmented now.
func NeedsDefrag(dbSize, inUse int64, sinceLast time.Duration) bool {
	waste := dbSize - inUse
	return sinceLast >= defragInterval && waste >= defragWaste && waste*2 >= dbSize
}

// FenceError reports the fence while it is up: a write is refused with etcd's own no-space error,
// so the storage layer answers it as it answers etcd's.
func (g *SpaceGuard) FenceError() error {
	if reason := g.fence.Load(); reason != nil {
		return fmt.Errorf("%s: %w", *reason, rpctypes.ErrGRPCNoSpace)
	}
	return nil
}

// Check is the guard's part of /readyz: the fence's reason while it is up.
func (g *SpaceGuard) Check() error {
	if reason := g.fence.Load(); reason != nil {
		return fmt.Errorf("etcd %s", *reason)
	}
	return nil
}

// Run checks every interval until ctx ends.
func (g *SpaceGuard) Run(ctx context.Context, interval time.Duration) {
	ticker := g.Clock.NewTicker(interval)
	defer ticker.Stop()
	for {
		g.step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

func (g *SpaceGuard) step(ctx context.Context) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(g.Dir, &st); err == nil {
		free, threshold := st.Bavail*uint64(st.Bsize), g.threshold(st.Blocks*uint64(st.Bsize))
		fenced := g.fence.Load() != nil
		free = g.keepReserve(free, threshold, fenced)
		d := DecideSpace(free, threshold, fenced)
		switch {
		case d.Fence && !fenced:
			g.fence.Store(&d.Reason)
			g.Log.Error("etcd's disk is nearly full: refusing writes", "dir", g.Dir, "reason", d.Reason)
		case !d.Fence && fenced:
			g.fence.Store(nil)
			g.Log.Info("etcd's disk has room again: writes accepted", "dir", g.Dir, "freeMiB", free>>20)
		}
		if !d.Fence {
			g.preallocateDB(int64(ReserveSize(threshold)))
		}
	}
	if !EtcdCheckDue(g.Clock.Since(g.lastEtcdCheck)) {
		return
	}
	g.lastEtcdCheck = g.Clock.Now()
	g.clearQuotaAlarm(ctx)
	g.defragment(ctx)
}

// threshold is the fence's threshold on a file system of total bytes.
func (g *SpaceGuard) threshold(total uint64) uint64 {
	if g.Threshold > 0 {
		return g.Threshold
	}
	return DiskReserve(total)
}

// keepReserve carries out DecideReserve and answers the free space the fence counts after it
// (FenceFree).
func (g *SpaceGuard) keepReserve(free, threshold uint64, fenced bool) uint64 {
	path := filepath.Join(g.Dir, ReserveFile)
	_, err := os.Stat(path)
	have := err == nil
	size := ReserveSize(threshold)
	switch DecideReserve(free, threshold, have) {
	case ReleaseReserve:
		// A half-made reserve (a crash while making it) goes too.
		if err := errors.Join(os.Remove(path), ignoreNotExist(os.Remove(path+".tmp"))); err != nil {
			g.Log.Error("release etcd's disk reserve", "path", path, "err", err)
			return FenceFree(free, threshold, true, fenced)
		}
		g.Log.Error("etcd's disk is full: released its reserve for etcd's own commits", "path", path, "freeMiB", free>>20, "reserveMiB", size>>20)
		return FenceFree(free+size, threshold, false, fenced)
	case CreateReserve:
		if err := makeReserve(path, int64(size)); err != nil {
			g.Log.Warn("make etcd's disk reserve", "path", path, "err", err)
			return FenceFree(free, threshold, false, fenced)
		}
		g.Log.Info("etcd's disk reserve in place", "path", path, "reserveMiB", size>>20)
		return FenceFree(free-size, threshold, true, fenced)
	}
	return FenceFree(free, threshold, have, fenced)
}

// dbFile tells versions of etcd's database file apart: bbolt grows it in place, a
// defragmentation replaces it.
type dbFile struct {
	ino  uint64
	size int64
}

// DBPreallocDue reports whether the database file's room must be preallocated again: it grew
// (into the room) or was replaced (a defragmentation writes a new file) since last.
func DBPreallocDue(last, now dbFile) bool { return now != last }

// preallocateDB keeps room bytes allocated to etcd's database file past its end, and fills the
// holes bbolt leaves when it grows the file by truncation. bbolt writes its pages with pwrite and
// etcd exits when a commit meets a full disk; the reserve file is given back to the file
// system when the disk fills, where any other writer (dd, a log) can take it before etcd does,
// while blocks the database file owns are etcd's alone. FALLOC_FL_KEEP_SIZE leaves the file's
// size as bbolt set it.
func (g *SpaceGuard) preallocateDB(room int64) {
	path := filepath.Join(g.Dir, "member", "snap", "db")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return // no database yet (a member still joining), or one etcd is replacing
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	now := dbFile{ino: fi.Sys().(*syscall.Stat_t).Ino, size: fi.Size()}
	if !DBPreallocDue(g.preallocated, now) {
		return
	}
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, now.size+room); err != nil {
		// Not retried for this version of the file: on a file system without fallocate it
		// never works, and on a full one the fence is about to rise anyway.
		g.preallocated = now
		g.Log.Warn("preallocate room for etcd's database", "path", path, "roomMiB", room>>20, "err", err)
		return
	}
	g.preallocated = now
}

func ignoreNotExist(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// makeReserve makes a file of size bytes at path with its blocks allocated (a sparse file would
// free nothing when removed), whole or not at all.
func makeReserve(path string, size int64) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = writeZeros(f, size)
	}
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("reserve %d bytes: %w", size, err), os.Remove(tmp))
	}
	return nil
}

// writeZeros fills f with size zero bytes, for file systems without fallocate.
func writeZeros(f *os.File, size int64) error {
	chunk := make([]byte, 1<<20)
	for written := int64(0); written < size; {
		n, err := f.Write(chunk[:min(int64(len(chunk)), size-written)])
		if err != nil {
			return err
		}
		written += int64(n)
	}
	return nil
}

// defragment gives the member's free pages back to the file system when NeedsDefrag says so.
func (g *SpaceGuard) defragment(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := g.Client.Status(ctx, g.Endpoint)
	if err != nil || !NeedsDefrag(st.DbSize, st.DbSizeInUse, g.Clock.Since(g.lastDefrag)) {
		return
	}
	g.lastDefrag = g.Clock.Now()
	if _, err := g.Client.Defragment(ctx, g.Endpoint); err != nil {
		g.Log.Warn("periodic etcd defragmentation failed", "err", err)
		return
	}
	g.Log.Info("etcd defragmented", "beforeMiB", st.DbSize>>20, "inUseMiB", st.DbSizeInUse>>20)
}

// clearQuotaAlarm disarms etcd's NOSPACE alarm (raised when the database outgrew its quota) once
// the data in use fits under 80% of the quota again, after a defragmentation that gives the
// freed pages back.
func (g *SpaceGuard) clearQuotaAlarm(ctx context.Context) {
	if g.Quota <= 0 {
		// No quota of skiff's: etcd's own default applies and its alarm is left to the operator.
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	alarms, err := g.Client.AlarmList(ctx)
	if err != nil {
		return
	}
	noSpace := false
	for _, a := range alarms.Alarms {
		if a.Alarm == etcdserverpb.AlarmType_NOSPACE {
			noSpace = true
		}
	}
	if !noSpace {
		return
	}
	st, err := g.Client.Status(ctx, g.Endpoint)
	if err != nil || st.DbSizeInUse > g.Quota*8/10 {
		return
	}
	if st.DbSize > g.Quota*8/10 {
		if _, err := g.Client.Defragment(ctx, g.Endpoint); err != nil {
			g.Log.Warn("defragment before clearing NOSPACE failed", "err", err)
			return
		}
	}
	if _, err := g.Client.AlarmDisarm(ctx, &clientv3.AlarmMember{Alarm: etcdserverpb.AlarmType_NOSPACE}); err != nil {
		g.Log.Warn("clear etcd's NOSPACE alarm", "err", err)
		return
	}
	g.Log.Info("etcd's NOSPACE alarm cleared: the database fits its quota again", "inUseMiB", st.DbSizeInUse>>20, "quotaMiB", g.Quota>>20)
}
