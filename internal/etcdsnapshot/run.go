package etcdsnapshot

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/leader"
)

// Scheduler takes snapshots on a schedule while its node holds the Lease.
type Scheduler struct {
	Schedule cron.Schedule
	// Retention is how many scheduled snapshots the directory keeps (below 1: all).
	Retention int
	Dir       Dir
	// Node names the snapshots and the Events' source.
	Node string
	// Etcd is the node's etcd client: its embedded member, or the external cluster.
	Etcd *clientv3.Client
	// Client records the snapshots in the API and holds the Lease.
	Client kubernetes.Interface
	// Identity is the Lease holder's identity (node and process).
	Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod: the Lease's timing (leader's defaults when zero).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Fence, when set, is the fence of this component's client transport: Campaign gives it each
	// term, so the client writes only while the Lease is confirmed held (leader.Fence).
	Fence *leader.Fence
	// SaveTimeout bounds one save (default 5 minutes): an etcd that does not answer fails the
	// run, which is recorded, rather than hanging the schedule.
	SaveTimeout time.Duration
	Clock       clock.Clock
	Log         *slog.Logger
}

// DefaultSaveTimeout is the SaveTimeout when none is set.
const DefaultSaveTimeout = 5 * time.Minute

// ErrLeaderElectionLost is returned by Run when the Lease was lost while leading.
var ErrLeaderElectionLost = leader.ErrLost

// Run campaigns for the Lease kube-system/skiff-etcd-snapshot and takes the scheduled snapshots
// while leading. It returns nil when ctx ends and ErrLeaderElectionLost when the Lease is lost.
func (s *Scheduler) Run(ctx context.Context) error {
	return leader.Campaign(ctx, leader.Config{
		Client: s.Client, Namespace: IndexNamespace, Name: LeaseName, Identity: s.Identity,
		LeaseDuration: s.LeaseDuration, RenewDeadline: s.RenewDeadline, RetryPeriod: s.RetryPeriod,
		Policy: leader.ReturnOnLoss, Logger: s.Log, Fence: s.Fence,
	}, func(ctx context.Context) error {
		s.Log.Info("snapshots are taken here", "identity", s.Identity, "dir", s.Dir.Path)
		s.Lead(ctx)
		return nil
	})
}

// Lead takes the snapshots the schedule asks for until ctx ends: it looks at the directory, asks
// Due whether one is due, takes it and prunes, or waits until the next time.
func (s *Scheduler) Lead(ctx context.Context) {
	since := s.Clock.Now()
	for {
		files, err := s.Dir.Scheduled()
		if err != nil {
			s.Log.Error("etcd snapshots", "err", err)
		}
		now := s.Clock.Now()
		due, next := Due(s.Schedule, Last(files, s.Node, since), now)
		if due {
			s.takeAndPrune(ctx, now)
			// The next run counts from this attempt even if it failed, so a failing save is
			// retried on schedule rather than in a loop.
			since = now
			continue
		}
		if next.IsZero() {
			s.Log.Warn("the etcd snapshot schedule never fires again")
			<-ctx.Done()
			return
		}
		t := s.Clock.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// takeAndPrune takes one snapshot, prunes past the retention and records both in the API. An
// API failure is logged: the snapshot on disk is what matters, and the next run records again.
func (s *Scheduler) takeAndPrune(ctx context.Context, now time.Time) {
	index := Index{Client: s.Client, Node: s.Node}
	name := FileName(s.Node, now)
	timeout := s.SaveTimeout
	if timeout <= 0 {
		timeout = DefaultSaveTimeout
	}
	saveCtx, cancel := context.WithTimeout(ctx, timeout)
	snap, err := s.Dir.Take(saveCtx, s.Etcd, name, s.Node, now, s.Log)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		s.Log.Error("scheduled etcd snapshot failed", "snapshot", name, "err", err)
		if err := index.Event(ctx, s.Clock.Now(), corev1.EventTypeWarning, ReasonFailed, fmt.Sprintf("snapshot %s on %s failed: %v", name, s.Node, err)); err != nil {
			s.Log.Warn("record etcd snapshot failure", "err", err)
		}
		return
	}
	s.Log.Info("etcd snapshot saved", "snapshot", snap.Path, "revision", snap.Revision, "keys", snap.Keys, "bytes", snap.Size)
	var removed []string
	files, err := s.Dir.Scheduled()
	if err != nil {
		s.Log.Error("etcd snapshot retention", "err", err)
	}
	for _, f := range Prune(files, s.Retention) {
		if err := s.Dir.Remove(f.Name); err != nil {
			s.Log.Error("etcd snapshot retention", "err", err)
			continue
		}
		removed = append(removed, f.Name)
	}
	if len(removed) > 0 {
		s.Log.Info("etcd snapshots pruned", "snapshots", removed, "retention", s.Retention)
	}
	if err := index.Update(ctx, []Snapshot{snap}, removed); err != nil {
		s.Log.Warn("record etcd snapshot", "snapshot", name, "err", err)
	}
	msg := fmt.Sprintf("saved %s on %s: revision %d, %d keys, %d bytes, sha256 %s", snap.Path, s.Node, snap.Revision, snap.Keys, snap.Size, snap.SHA256)
	if err := index.Event(ctx, s.Clock.Now(), corev1.EventTypeNormal, ReasonSaved, msg); err != nil {
		s.Log.Warn("record etcd snapshot", "snapshot", name, "err", err)
	}
	for _, r := range removed {
		if err := index.Event(ctx, s.Clock.Now(), corev1.EventTypeNormal, ReasonPruned, fmt.Sprintf("pruned %s on %s (retention %d)", r, s.Node, s.Retention)); err != nil {
			s.Log.Warn("record etcd snapshot prune", "snapshot", r, "err", err)
		}
	}
}
