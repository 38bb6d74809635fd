package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/etcdsnapshot"
)

// SnapshotConfig configures scheduled etcd snapshots and the cluster reset from one.
type SnapshotConfig struct {
	// Schedule is --etcd-snapshot-schedule (cron, with an optional seconds field, or a
	// descriptor such as @every 15s); empty takes no scheduled snapshots.
	Schedule string
	// Retention is how many scheduled snapshots the directory keeps (0: all).
	Retention int
	// Dir is where they go (default <data-dir>/etcd-snapshots).
	Dir string
	// ClusterReset makes this node's embedded etcd a one-member cluster with RestoreFrom's data
	// (--cluster-reset --restore-from FILE).
	ClusterReset bool
	RestoreFrom  string
}

// DefaultSnapshotDir is the snapshot directory under a data dir.
func DefaultSnapshotDir(dataDir string) string { return filepath.Join(dataDir, "etcd-snapshots") }

func (s *SnapshotConfig) defaults(dataDir string) {
	if s.Dir == "" {
		dir, _ := filepath.Abs(dataDir)
		s.Dir = DefaultSnapshotDir(dir)
	}
}

func (s *SnapshotConfig) validate(c *Config) []error {
	var errs []error
	if s.Schedule != "" {
		if _, err := etcdsnapshot.ParseSchedule(s.Schedule); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Retention < 0 {
		errs = append(errs, fmt.Errorf("--etcd-snapshot-retention %d must not be negative", s.Retention))
	}
	if s.ClusterReset != (s.RestoreFrom != "") {
		errs = append(errs, errors.New("--cluster-reset and --restore-from FILE go together"))
	}
	if s.ClusterReset {
		if !c.HasRole(RoleEtcd) || len(c.EtcdServers) > 0 {
			errs = append(errs, errors.New("--cluster-reset restores this node's embedded etcd member: it needs the etcd role and no --etcd-servers"))
		}
		if c.Server != "" || c.EtcdJoinKubeconfig != "" {
			errs = append(errs, errors.New("--cluster-reset makes this node a cluster of its own: drop --server and --etcd-join-kubeconfig; the other members rejoin it"))
		}
		if _, err := os.Stat(s.RestoreFrom); err != nil {
			errs = append(errs, fmt.Errorf("--restore-from: %w", err))
		}
	}
	return errs
}

// etcdSnapshotRole takes the scheduled snapshots while this node holds the Lease; nothing when
// no schedule is set.
func (n *Node) etcdSnapshotRole() role {
	return role{name: "etcd snapshots", run: func(ctx context.Context) error {
		if n.cfg.Snapshots.Schedule == "" {
			return nil
		}
		sched, err := etcdsnapshot.ParseSchedule(n.cfg.Snapshots.Schedule)
		if err != nil {
			return err
		}
		// The scheduler holds this node's etcd client already, so an identity narrower than
		// system:masters in the API would guard nothing it could not reach through etcd.
		networkCfg, err := componentRESTConfig(&n.cfg, "system:skiff:etcd-snapshot", []string{"system:masters"}, clock.RealClock{}.Now())
		if err != nil {
			return err
		}
		restCfg, err := inProcessRESTConfig(networkCfg, n.api)
		if err != nil {
			return err
		}
		fence := fenced(restCfg)
		client, err := kubernetes.NewForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("etcd snapshot client: %w", err)
		}
		s := &etcdsnapshot.Scheduler{
			Schedule: sched, Retention: n.cfg.Snapshots.Retention, Dir: etcdsnapshot.Dir{Path: n.cfg.Snapshots.Dir},
			Node: n.cfg.NodeName, Etcd: n.etcdClient, Client: client, Fence: fence,
			Identity:      n.cfg.NodeName + "_" + fmt.Sprint(os.Getpid()),
			LeaseDuration: n.cfg.LeaseDuration, RenewDeadline: n.cfg.RenewDeadline, RetryPeriod: n.cfg.RetryPeriod,
			Clock: clock.RealClock{}, Log: n.cfg.Logger.With("component", "etcd-snapshot"),
		}
		if s.LeaseDuration == 0 {
			s.LeaseDuration, s.RenewDeadline, s.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
		}
		for {
			err := s.Run(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil && !errors.Is(err, etcdsnapshot.ErrLeaderElectionLost) {
				return err
			}
			s.Log.Warn("etcd snapshot scheduler lost its lease; campaigning again")
		}
	}}
}

// snapshotAPITimeout bounds the look at the API's snapshot index from the command line: ls and
// prune work on the local directory whether or not the cluster answers.
const snapshotAPITimeout = 5 * time.Second

// ListEtcdSnapshots lists the snapshots in dir merged with the API's index, which the node on
// dataDir is asked for; apiErr says why the index is missing from the answer (the cluster is
// down, or the node never ran).
func ListEtcdSnapshots(ctx context.Context, dataDir, dir string) (list []etcdsnapshot.Listing, apiErr, err error) {
	local, err := etcdsnapshot.Dir{Path: dir}.All()
	if err != nil {
		return nil, nil, err
	}
	var recorded []etcdsnapshot.Snapshot
	client, apiErr := adminClient(filepath.Join(dataDir, "admin.kubeconfig"))
	if apiErr == nil {
		ctx, cancel := context.WithTimeout(ctx, snapshotAPITimeout)
		defer cancel()
		var cm *corev1.ConfigMap
		cm, apiErr = client.CoreV1().ConfigMaps(etcdsnapshot.IndexNamespace).Get(ctx, etcdsnapshot.IndexName, metav1.GetOptions{})
		if apierrors.IsNotFound(apiErr) {
			apiErr = nil // no scheduled snapshot yet
		} else if apiErr == nil {
			recorded, apiErr = etcdsnapshot.ParseIndex(cm)
		}
	}
	return etcdsnapshot.Merge(local, recorded), apiErr, nil
}

// PruneEtcdSnapshots removes the oldest scheduled snapshots in dir beyond retention, as the
// scheduler does, and forgets them in the API's index when the cluster answers (apiErr when
// not). Snapshots saved by hand are never removed.
func PruneEtcdSnapshots(ctx context.Context, dataDir, dir string, retention int) (removed []string, apiErr, err error) {
	d := etcdsnapshot.Dir{Path: dir}
	files, err := d.Scheduled()
	if err != nil {
		return nil, nil, err
	}
	for _, f := range etcdsnapshot.Prune(files, retention) {
		if err := d.Remove(f.Name); err != nil {
			return removed, nil, err
		}
		removed = append(removed, f.Name)
	}
	if len(removed) == 0 {
		return nil, nil, nil
	}
	client, apiErr := adminClient(filepath.Join(dataDir, "admin.kubeconfig"))
	if apiErr == nil {
		ctx, cancel := context.WithTimeout(ctx, snapshotAPITimeout)
		defer cancel()
		apiErr = etcdsnapshot.Index{Client: client}.Update(ctx, nil, removed)
	}
	return removed, apiErr, nil
}
