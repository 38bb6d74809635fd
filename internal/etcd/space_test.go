package etcd_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
)

func TestDecideSpace(t *testing.T) {
	const gib = uint64(1) << 30
	for _, tc := range []struct {
		name          string
		free, total   uint64
		fenced, fence bool
	}{
		{"plenty", 50 * gib, 100 * gib, false, false},
		{"under 5% of a mid-size disk", 800 << 20, 16 * gib, false, true},
		{"above 5% of a mid-size disk", 900 << 20, 16 * gib, false, false},
		{"a large disk keeps at most 1 GiB", 2 * gib, 250 * gib, false, false},
		{"under 1 GiB of a large disk", gib - 1, 250 * gib, false, true},
		{"large disk fenced until 2 GiB", 3 * gib / 2, 250 * gib, true, true},
		{"small disk keeps a WAL segment", 60 << 20, 200 << 20, false, true},
		{"small disk above the segment", 70 << 20, 200 << 20, false, false},
		{"fenced until twice the reserve", 100 << 20, 200 << 20, true, true},
		{"fence lifted at twice the reserve", 130 << 20, 200 << 20, true, false},
	} {
		d := etcd.DecideSpace(tc.free, etcd.DiskReserve(tc.total), tc.fenced)
		if d.Fence != tc.fence || (d.Fence && d.Reason == "") {
			t.Errorf("%s: %+v, want fence %v", tc.name, d, tc.fence)
		}
	}
}

func TestNeedsDefrag(t *testing.T) {
	for _, tc := range []struct {
		db, inUse int64
		since     time.Duration
		want      bool
	}{
		{1 << 30, 100 << 20, 2 * time.Hour, true},
		{1 << 30, 100 << 20, time.Minute, false},
		{100 << 20, 10 << 20, 2 * time.Hour, true},
		{60 << 20, 1 << 20, 2 * time.Hour, false}, // under 64 MiB of waste
		{1 << 30, 700 << 20, 2 * time.Hour, false},
	} {
		if got := etcd.NeedsDefrag(tc.db, tc.inUse, tc.since); got != tc.want {
			t.Errorf("NeedsDefrag(%d, %d, %s) = %v", tc.db, tc.inUse, tc.since, got)
		}
	}
}

// TestEtcdCheckDue: the guard asks etcd for alarms and status far less often than it reads the
// disk (every tick), and never twice within the interval.
func TestEtcdCheckDue(t *testing.T) {
	for _, tc := range []struct {
		since time.Duration
		want  bool
	}{
		{0, false},
		{time.Second, false},
		{14 * time.Second, false},
		{15 * time.Second, true},
		{time.Hour, true},
		{time.Since(time.Time{}), true}, // never checked yet
	} {
		if got := etcd.EtcdCheckDue(tc.since); got != tc.want {
			t.Errorf("EtcdCheckDue(%s) = %v, want %v", tc.since, got, tc.want)
		}
	}
}

// TestFenceWrites: while fenced, puts (alone or in a transaction's branches) fail with etcd's own
// no-space error; reads, deletes and put-free transactions go through; lifting the fence lets
// writes through again.
func TestFenceWrites(t *testing.T) {
	member := etcdtest.StartEmbedded(t, etcdtest.Options{})
	raw, err := member.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var fenced atomic.Bool
	c := etcd.FenceWrites(raw, func() error {
		if fenced.Load() {
			return errors.Join(errors.New("disk full"), rpctypes.ErrGRPCNoSpace)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	fenced.Store(true)
	noSpace := func(err error) bool { return errors.Is(err, rpctypes.ErrGRPCNoSpace) }
	if _, err := c.Put(ctx, "/k2", "v"); !noSpace(err) {
		t.Fatalf("fenced put: %v", err)
	}
	if _, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision("/k3"), "=", 0)).Then(clientv3.OpPut("/k3", "v")).Commit(); !noSpace(err) {
		t.Fatalf("fenced txn put: %v", err)
	}
	if _, err := c.Txn(ctx).Then(clientv3.OpGet("/k")).Else(clientv3.OpPut("/k", "x")).Commit(); !noSpace(err) {
		t.Fatalf("fenced txn with a put in else: %v", err)
	}
	if resp, err := c.Get(ctx, "/k"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read while fenced: %v", err)
	}
	if _, err := c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("/k"), ">", 0)).Then(clientv3.OpDelete("/k")).Commit(); err != nil {
		t.Fatalf("delete while fenced: %v", err)
	}
	fenced.Store(false)
	if _, err := c.Put(ctx, "/k2", "v"); err != nil {
		t.Fatalf("put after the fence: %v", err)
	}
}

// TestDecideReserve walks issue 32's scenario on a 400 MiB file system beside DecideSpace: the
// reserve is made while there is room, released the moment another process takes the disk,
// kept out while the fence is up, and made again once the space is back; making it never raises
// the fence.
func TestDecideReserve(t *testing.T) {
	const total = 400 << 20
	threshold := etcd.DiskReserve(total)
	size := etcd.ReserveSize(threshold)
	if size < 16<<20 || size >= threshold {
		t.Fatalf("reserve %d MiB on 400 MiB: want at least 16 MiB and under the fence's %d MiB", size>>20, threshold>>20)
	}
	free := uint64(230 << 20)
	have, fenced := false, false
	step := func(name string, wantAction etcd.ReserveAction, wantFence bool) {
		t.Helper()
		action := etcd.DecideReserve(free, threshold, have)
		switch action {
		case etcd.ReleaseReserve:
			have, free = false, free+size
		case etcd.CreateReserve:
			have, free = true, free-size
		}
		fenced = etcd.DecideSpace(etcd.FenceFree(free, threshold, have, fenced), threshold, fenced).Fence
		if action != wantAction || fenced != wantFence {
			t.Errorf("%s: action %d fence %v, want %d %v (free %d MiB)", name, action, fenced, wantAction, wantFence, free>>20)
		}
	}
	step("room at start: made", etcd.CreateReserve, false)
	step("made once", etcd.KeepReserve, false)
	free -= 50 << 20
	step("ordinary use", etcd.KeepReserve, false)
	free = threshold - 15<<20 // another process took the disk down to just under the threshold
	step("under the threshold: released, writes fenced though the release lifts free above it", etcd.ReleaseReserve, true)
	free -= 4 << 20 // etcd's own commits used some of it
	step("etcd commits into the released space", etcd.KeepReserve, true)
	free = 0 // dd took every free byte, the released reserve too
	step("disk full", etcd.KeepReserve, true)
	free += 100 << 20
	step("some space back: still fenced, not made again", etcd.KeepReserve, true)
	free = 2 * threshold
	step("twice the threshold free: writes resume, the reserve not made yet", etcd.KeepReserve, false)
	step("and stay on (the missing reserve counted out is still above the threshold)", etcd.KeepReserve, false)
	free = threshold + size - 1<<20
	step("writes take it under the threshold plus the missing reserve: fenced again", etcd.KeepReserve, true)
	free = 230 << 20 // the fill was removed
	step("space back: made again, fence down", etcd.CreateReserve, false)

	for _, tc := range []struct {
		name   string
		free   uint64
		have   bool
		action etcd.ReserveAction
	}{
		{"just above the threshold keeps it", threshold, true, etcd.KeepReserve},
		{"just under the threshold releases it", threshold - 1, true, etcd.ReleaseReserve},
		{"not made when it would leave less than the fence's lifting point", 2*threshold + size - 1, false, etcd.KeepReserve},
		{"made at the lifting point plus its size", 2*threshold + size, false, etcd.CreateReserve},
		{"a large disk keeps 128 MiB", 100 << 30, false, etcd.CreateReserve},
	} {
		if got := etcd.DecideReserve(tc.free, threshold, tc.have); got != tc.action {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.action)
		}
	}
	for _, tc := range []struct {
		name            string
		threshold, want uint64
	}{
		{"1 TiB disk's automatic threshold", etcd.DiskReserve(1 << 40), 128 << 20},
		{"an operator's 128 MiB", 128 << 20, 16 << 20},
		{"an operator's 512 MiB", 512 << 20, 64 << 20},
		{"an operator's 8 GiB", 8 << 30, 128 << 20},
	} {
		if got := etcd.ReserveSize(tc.threshold); got != tc.want {
			t.Errorf("%s: ReserveSize(%d MiB) = %d MiB, want %d", tc.name, tc.threshold>>20, got>>20, tc.want>>20)
		}
	}
}
