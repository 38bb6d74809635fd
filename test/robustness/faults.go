package robustness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/nodeadmin"
)

// FaultKind names a failure the suite injects.
type FaultKind string

// The faults.
const (
	// FaultKill: kill -9 of a node, restarted after a moment.
	FaultKill FaultKind = "kill"
	// FaultPause: SIGSTOP of a node for PauseMin-PauseMax, then SIGCONT.
	FaultPause FaultKind = "pause"
	// FaultKillEtcdLeader: kill -9 of the node whose member leads etcd, restarted.
	FaultKillEtcdLeader FaultKind = "kill-etcd-leader"
	// FaultKillLeaseHolder: kill -9 of the node holding the controller-manager Lease, restarted.
	FaultKillLeaseHolder FaultKind = "kill-lease-holder"
	// FaultCompact: etcd compaction to the current revision and a defragmentation, while the
	// watches run (a watch resumed from before it gets 410 and relists).
	FaultCompact FaultKind = "compact"
	// FaultPartition: one node cut off from the others both ways for PauseMin-PauseMax
	// (partition.go), then healed.
	FaultPartition FaultKind = "partition"
	// FaultPartitionOneWay: everything one node sends to the others lost, what they send still
	// arriving, for PauseMin-PauseMax.
	FaultPartitionOneWay FaultKind = "partition-oneway"
	// FaultFullDisk: one node's disk (its data dir, a filesystem of its own in this scenario)
	// filled to the last byte for PauseMin-PauseMax, then emptied; a node that stopped on it is
	// started again.
	FaultFullDisk FaultKind = "full-disk"
	// FaultPauseEtcd: SIGSTOP of the external etcd the control planes share, for
	// PauseMin-PauseMax, then SIGCONT: every API server loses its store at once.
	FaultPauseEtcd FaultKind = "pause-external-etcd"
	// FaultKillEtcd: kill -9 of the external etcd, started again after a moment.
	FaultKillEtcd FaultKind = "kill-external-etcd"
	// FaultRestore: a snapshot of the node's etcd, Length more traffic, then kill -9 and a
	// cluster reset from the snapshot (--cluster-reset --restore-from): the writes after the
	// snapshot are gone by design, their revisions must never come back (rewind.go).
	FaultRestore FaultKind = "restore-from-snapshot"
)

// PlannedFault is one fault of a schedule.
type PlannedFault struct {
	At   time.Duration
	Kind FaultKind
	// Node is the target's index for kill and pause (resolved at the time for the leaders).
	Node int
	// Length is a pause's duration, or the time a killed node stays down.
	Length time.Duration
}

// ScheduleConfig shapes a schedule.
type ScheduleConfig struct {
	Kind     FaultKind
	Nodes    int
	Duration time.Duration
	// Warmup is the traffic before the first fault; Cooldown the fault-free end.
	Warmup, Cooldown time.Duration
	// Gap is the fault-free time after one fault before the next.
	Gap                time.Duration
	PauseMin, PauseMax time.Duration
	Seed               uint64
}

// Schedule plans the faults of a run: a pure function of its config (the seed makes a failing
// run's faults repeatable). A fault's slot is its length plus the gap; the last ends before the
// cooldown.
func Schedule(c ScheduleConfig) []PlannedFault {
	rng := rand.New(rand.NewPCG(c.Seed, 7))
	var out []PlannedFault
	at := c.Warmup
	for {
		f := PlannedFault{At: at, Kind: c.Kind, Node: rng.IntN(max(c.Nodes, 1))}
		switch c.Kind {
		case FaultPause, FaultPartition, FaultPartitionOneWay, FaultFullDisk, FaultPauseEtcd:
			f.Length = c.PauseMin + time.Duration(rng.Int64N(int64(c.PauseMax-c.PauseMin)+1))
		case FaultCompact:
		default:
			f.Length = time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
		}
		if at+f.Length > c.Duration-c.Cooldown {
			return out
		}
		out = append(out, f)
		at += f.Length + c.Gap
	}
}

// Cluster is what faults act on.
type Cluster struct {
	// Nodes are the control planes (the faults' targets); Workers the worker nodes.
	Nodes   []*Node
	Workers []*Node
	Clock   clock.WithTicker
	// Cgroups and Partitions are set for partition scenarios: every node runs in its own cgroup.
	Cgroups    *Cgroups
	Partitions *Partitions
	// External is the etcd the control planes share in an external-etcd scenario (nil when
	// their members are their own).
	External *ExternalEtcd
	// log and lister record what a restore does (Run sets them): its rewind, and the exact LIST
	// at the snapshot's revision.
	log    *Log
	lister *Client
}

// targetWait bounds the wait for a leader to name: after a Lease holder is killed, the Lease is
// taken over only when its 15 s have run out, which can be after the gap to the next fault.
const targetWait = 45 * time.Second

// target resolves a fault's node: the etcd leader's or the Lease holder's at the time, waiting
// (up to targetWait) while there is none.
func (c *Cluster) target(ctx context.Context, f PlannedFault) (*Node, error) {
	if f.Kind != FaultKillEtcdLeader && f.Kind != FaultKillLeaseHolder {
		return c.Nodes[f.Node%len(c.Nodes)], nil
	}
	deadline := c.Clock.Now().Add(targetWait)
	for {
		n, err := c.leader(ctx, f)
		if err == nil || c.Clock.Now().After(deadline) || ctx.Err() != nil {
			return n, err
		}
		c.sleep(ctx, 500*time.Millisecond)
	}
}

// leader is the node holding the etcd leadership or the Lease now.
func (c *Cluster) leader(ctx context.Context, f PlannedFault) (*Node, error) {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		r, err := n.Status(ctx)
		if err != nil {
			continue
		}
		if name := holderName(r, f.Kind); name != "" {
			for _, m := range c.Nodes {
				if m.Name == name {
					return m, nil
				}
			}
			return nil, fmt.Errorf("%s %q is none of the nodes", f.Kind, name)
		}
	}
	return nil, fmt.Errorf("no node could name the target of %s", f.Kind)
}

// holderName is the node an etcd leader or a Lease holder names ("<node>_<pid>" for Leases).
func holderName(r nodeadmin.Report, kind FaultKind) string {
	if kind == FaultKillEtcdLeader {
		return EtcdLeader(r)
	}
	holder := LeaseHolder(r, nodeadmin.ControllerLease)
	name, _, _ := strings.Cut(holder, "_")
	return name
}

// Inject carries out one fault and waits for the cluster to serve again.
func (c *Cluster) Inject(ctx context.Context, f PlannedFault) (string, error) {
	if f.Kind == FaultCompact {
		return "compact", c.compact(ctx)
	}
	if f.Kind == FaultPauseEtcd || f.Kind == FaultKillEtcd {
		return string(f.Kind), c.externalFault(ctx, f)
	}
	n, err := c.target(ctx, f)
	if err != nil {
		return string(f.Kind), err
	}
	name := fmt.Sprintf("%s %s", f.Kind, n.Name)
	if f.Kind == FaultPartition || f.Kind == FaultPartitionOneWay {
		return name, c.partition(ctx, n, f)
	}
	if f.Kind == FaultFullDisk {
		filled, restarted, err := c.fillDisk(ctx, n, f)
		name = fmt.Sprintf("%s (%d MiB filled, %d KiB left", name, filled>>20, leftAfterFill>>10)
		if restarted {
			name += "; the node stopped and was started again"
		}
		return name + ")", err
	}
	if f.Kind == FaultRestore {
		return name, c.restore(ctx, n, f)
	}
	if f.Kind == FaultPause {
		if err := n.Pause(); err != nil {
			return name, err
		}
		c.sleep(ctx, f.Length)
		return name, n.Resume()
	}
	n.Kill()
	c.sleep(ctx, f.Length)
	if err := n.Start(); err != nil {
		return name, err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return name, n.WaitReady(wctx, c.Clock)
}

// externalFault pauses or kills the external etcd for f.Length; a killed one is started again
// and waited for.
func (c *Cluster) externalFault(ctx context.Context, f PlannedFault) error {
	e := c.External
	if e == nil {
		return fmt.Errorf("%s: the scenario has no external etcd", f.Kind)
	}
	if f.Kind == FaultPauseEtcd {
		if err := e.Pause(); err != nil {
			return err
		}
		c.sleep(ctx, f.Length)
		return e.Resume()
	}
	e.Kill()
	c.sleep(ctx, f.Length)
	if err := e.Start(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return e.WaitHealthy(wctx, c.Clock)
}

// fillDisk fills the filesystem of n's data dir (one of its own: a filler as large as what is
// free, then the bytes left), holds it full for f.Length, and empties it. A node that stopped on
// the full disk is started again.
func (c *Cluster) fillDisk(ctx context.Context, n *Node, f PlannedFault) (filled int64, restarted bool, err error) {
	filler := filepath.Join(n.DataDir, "robustness-filler")
	if filled, err = fill(filler); err != nil {
		_ = os.Remove(filler)
		return filled, false, fmt.Errorf("fill %s: %w", n.DataDir, err)
	}
	c.sleep(ctx, f.Length)
	if err := os.Remove(filler); err != nil {
		return filled, false, fmt.Errorf("empty %s: %w", n.DataDir, err)
	}
	if n.Running() {
		return filled, false, nil
	}
	if err := n.Start(); err != nil {
		return filled, true, err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return filled, true, n.WaitReady(wctx, c.Clock)
}

// leftAfterFill is what fill leaves free at most: its last write is refused for want of one
// block, so less than a block (4 KiB on tmpfs) stays.
const leftAfterFill = 4 << 10

// fill writes path until its filesystem has no byte left (a file as large as what is free, then
// what the writes still find room for) and says how large the file became.
func fill(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		return 0, err
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	if free := int64(st.Bavail) * st.Bsize; free > 0 {
		if err := syscall.Fallocate(int(file.Fd()), 0, 0, free); err != nil && !errors.Is(err, syscall.ENOSPC) {
			return 0, err
		}
	}
	chunk := make([]byte, 64<<10)
	for len(chunk) > 0 {
		if _, err := file.Seek(0, io.SeekEnd); err != nil {
			return 0, err
		}
		if _, err := file.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				return 0, err
			}
			chunk = chunk[:len(chunk)/2]
		}
	}
	size, err := file.Seek(0, io.SeekEnd)
	return size, err
}

func (c *Cluster) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-c.Clock.After(d):
	}
}

// compact compacts etcd to its current revision and defragments the member, through the
// external etcd when the scenario has one, else the first running node's member.
func (c *Cluster) compact(ctx context.Context) error {
	if c.External != nil {
		cli, err := c.External.Etcd()
		if err != nil {
			return err
		}
		defer cli.Close()
		return compactThrough(ctx, cli)
	}
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cli, err := n.Etcd()
		if err != nil {
			return err
		}
		defer cli.Close()
		return compactThrough(ctx, cli)
	}
	return fmt.Errorf("no running node to compact through")
}

func compactThrough(ctx context.Context, cli *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "compact-probe")
	if err != nil {
		return fmt.Errorf("etcd revision: %w", err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil && !strings.Contains(err.Error(), "compacted") {
		return fmt.Errorf("compact to %d: %w", resp.Header.Revision, err)
	}
	if _, err := cli.Defragment(ctx, cli.Endpoints()[0]); err != nil {
		return fmt.Errorf("defragment: %w", err)
	}
	return nil
}

// partition cuts n off for the fault's length, heals the cut and waits for n to serve again.
func (c *Cluster) partition(ctx context.Context, n *Node, f PlannedFault) error {
	if c.Cgroups == nil || c.Partitions == nil {
		return fmt.Errorf("%s: the cluster's nodes run in no cgroups of their own", f.Kind)
	}
	p := PartitionPlan{OneWay: f.Kind == FaultPartitionOneWay}
	for i, m := range c.Nodes {
		if m == n {
			p.Target = i
		}
		p.Nodes = append(p.Nodes, c.Cgroups.Ref(m.Cgroup))
	}
	table, err := c.Partitions.Cut(ctx, p)
	if err != nil {
		return errors.Join(err, c.Partitions.Heal(table))
	}
	c.sleep(ctx, f.Length)
	if err := c.Partitions.Heal(table); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return n.WaitReady(wctx, c.Clock)
}

// restore snapshots n's etcd, records the test's objects at the snapshot's revision (an exact
// LIST), lets traffic run for the fault's length, then kills every node and starts n again with
// a cluster reset from the snapshot, the others rejoining it. The rewind goes into the history
// for the checks.
func (c *Cluster) restore(ctx context.Context, n *Node, f PlannedFault) error {
	if c.log == nil || c.lister == nil {
		return errors.New("restore: the run records no rewinds")
	}
	if c.External != nil || len(c.Workers) > 0 {
		return errors.New("restore: scripted for stacked control planes without workers")
	}
	cli, err := n.Etcd()
	if err != nil {
		return err
	}
	file := filepath.Join(n.DataDir, fmt.Sprintf("robustness-snapshot-%d.db", c.log.Now()))
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	st, err := etcd.SaveSnapshot(sctx, cli, file, nil)
	cancel()
	cli.Close()
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	state := c.lister.List(lctx, strconv.FormatInt(st.Revision, 10), string(metav1.ResourceVersionMatchExact), 0)
	cancel()
	if state.Outcome != OutcomeOK {
		return fmt.Errorf("restore: exact LIST at the snapshot's revision %d: %s", st.Revision, state.Reason)
	}
	c.sleep(ctx, f.Length)
	// A cluster reset as docs/user/backups.md has it: every member stops, n starts as a
	// one-member cluster from the snapshot, then the others start again pointing at it; each
	// finds it is no member, moves its etcd data aside and joins as a learner.
	for _, m := range c.Nodes {
		m.Kill()
	}
	stopped := c.log.Now()
	n.Once = []string{"--cluster-reset", "--restore-from", file}
	if err := n.Start(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := n.WaitReady(wctx, c.Clock); err != nil {
		return err
	}
	c.log.AddRewind(Rewind{SnapshotRV: st.Revision, Stopped: stopped, Ready: c.log.Now(), State: state.Items,
		Bump: etcd.RestoreRevisionBump})
	server := fmt.Sprintf("https://%s:%d", n.Addr, n.HTTPSPort)
	for _, m := range c.Nodes {
		if m == n {
			continue
		}
		m.Once = []string{"--server", server}
		if err := m.Start(); err != nil {
			return err
		}
	}
	for _, m := range c.Nodes {
		if err := m.WaitReady(wctx, c.Clock); err != nil {
			return err
		}
	}
	// What the reset keeps of the old store (etcd-old-<time>: its WAL and disk reserve, hundreds
	// of MiB) and the snapshot are an operator's backup, not the test's: a long run of restores
	// would fill the disk with them.
	gone := []string{file}
	for _, m := range c.Nodes {
		old, _ := filepath.Glob(filepath.Join(m.DataDir, "etcd-old-*"))
		gone = append(gone, old...)
	}
	for _, dir := range gone {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("restore: remove %s: %w", dir, err)
		}
	}
	return nil
}
