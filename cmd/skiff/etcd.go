package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skiff-sh/skiff/internal/cluster"
)

const etcdUsage = `Usage:
  skiff etcd snapshot save [--data-dir D] FILE      snapshot the running node's etcd into FILE
  skiff etcd snapshot restore [--data-dir NEW] [--node-name N] [--etcd-peer-port P]
                              [--bind-address A] [--advertise-address A] FILE
                                                    prepare NEW so that skiff server --data-dir NEW
                                                    starts with every object of FILE
  skiff etcd snapshot ls [--data-dir D] [--etcd-snapshot-dir DIR]
                                                    list the snapshots in DIR (default D/etcd-snapshots)
                                                    and those the cluster's index records
  skiff etcd snapshot prune --etcd-snapshot-retention N [--data-dir D] [--etcd-snapshot-dir DIR]
                                                    remove the oldest scheduled snapshots in DIR
                                                    beyond N (never one saved by hand)
`

func runEtcd(args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "snapshot" {
		fmt.Fprint(stderr, etcdUsage)
		return errors.New("skiff etcd: snapshot save, restore, ls or prune")
	}
	switch args[1] {
	case "save":
		return runSnapshotSave(args[2:], stdout, stderr)
	case "restore":
		return runSnapshotRestore(args[2:], stdout, stderr)
	case "ls", "list":
		return runSnapshotList(args[2:], stdout, stderr)
	case "prune":
		return runSnapshotPrune(args[2:], stdout, stderr)
	}
	fmt.Fprint(stderr, etcdUsage)
	return fmt.Errorf("skiff etcd snapshot: unknown command %q", args[1])
}

func runSnapshotSave(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff etcd snapshot save", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", defaultDataDir(), "data dir of the running node")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("skiff etcd snapshot save: one FILE is required")
	}
	ctx, stop := commandContext()
	defer stop()
	st, err := cluster.SaveEtcdSnapshot(ctx, *dataDir, fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "saved %s: revision %d, %d keys, %d bytes\n", fs.Arg(0), st.Revision, st.TotalKeys, st.TotalSize)
	return nil
}

func runSnapshotRestore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff etcd snapshot restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg cluster.Config
	fs.StringVar(&cfg.DataDir, "data-dir", defaultDataDir(), "new data dir to restore into (must hold no etcd data)")
	fs.StringVar(&cfg.NodeName, "node-name", "", "name of the node that will run on it (default: host name)")
	fs.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", 2380, "embedded etcd peer port the node will use")
	fs.StringVar(&cfg.BindAddress, "bind-address", "0.0.0.0", "--bind-address the node will use")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "--advertise-address the node will use (default: bind address, or the host's address)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("skiff etcd snapshot restore: one FILE is required")
	}
	if err := cluster.RestoreEtcdSnapshot(cfg, fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s into %s; start it with: skiff server --data-dir %s (copy pki/ from the old data dir first to keep the cluster's credentials)\n", fs.Arg(0), cfg.DataDir, cfg.DataDir)
	return nil
}

// addEtcdSnapshotFlags adds skiff server's scheduled-snapshot and cluster-reset flags.
func addEtcdSnapshotFlags(fs *flag.FlagSet, s *cluster.SnapshotConfig) {
	fs.StringVar(&s.Schedule, "etcd-snapshot-schedule", "0 */12 * * *", "when control-plane nodes snapshot etcd (one at a time, the holder of the Lease kube-system/skiff-etcd-snapshot): cron (5 fields, or 6 with seconds first) or a descriptor such as @every 1h; empty: never")
	fs.IntVar(&s.Retention, "etcd-snapshot-retention", 5, "scheduled snapshots kept in --etcd-snapshot-dir, the oldest pruned (0: all); snapshots saved by hand are never pruned")
	fs.StringVar(&s.Dir, "etcd-snapshot-dir", "", "directory of scheduled snapshots (default <data-dir>/etcd-snapshots)")
	fs.BoolVar(&s.ClusterReset, "cluster-reset", false, "with --restore-from: make this node's embedded etcd a new one-member cluster holding the snapshot's data (its old etcd data moved to <data-dir>/etcd-old-<time>); the other members rejoin it")
	fs.StringVar(&s.RestoreFrom, "restore-from", "", "the snapshot file --cluster-reset restores")
}

// snapshotDirFlags are ls and prune's --data-dir and --etcd-snapshot-dir.
func snapshotDirFlags(fs *flag.FlagSet) (dataDir, dir *string) {
	dataDir = fs.String("data-dir", defaultDataDir(), "data dir of the node (its admin kubeconfig reads the cluster's snapshot index)")
	dir = fs.String("etcd-snapshot-dir", "", "snapshot directory (default <data-dir>/etcd-snapshots)")
	return dataDir, dir
}

func runSnapshotList(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff etcd snapshot ls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir, dir := snapshotDirFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		*dir = cluster.DefaultSnapshotDir(*dataDir)
	}
	ctx, stop := commandContext()
	defer stop()
	list, apiErr, err := cluster.ListEtcdSnapshots(ctx, *dataDir, *dir)
	if err != nil {
		return err
	}
	if apiErr != nil {
		fmt.Fprintf(stderr, "the cluster's snapshot index (kube-system/skiff-etcd-snapshots) is not shown: %v\n", apiErr)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tNODE\tTAKEN\tSIZE\tREVISION\tWHERE\tSHA256")
	for _, s := range list {
		var where []string
		if s.Local {
			where = append(where, *dir)
		}
		if s.Recorded {
			where = append(where, "index")
		}
		node, rev, sum := s.Node, "-", s.SHA256
		if node == "" {
			node = "-"
		}
		if s.Revision != 0 {
			rev = fmt.Sprint(s.Revision)
		}
		if sum == "" {
			sum = "-"
		} else if len(sum) > 12 {
			sum = sum[:12]
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", s.Name, node, s.Taken.UTC().Format(time.RFC3339), s.Size, rev, strings.Join(where, ","), sum)
	}
	return w.Flush()
}

func runSnapshotPrune(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("skiff etcd snapshot prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir, dir := snapshotDirFlags(fs)
	retention := fs.Int("etcd-snapshot-retention", -1, "scheduled snapshots to keep (required, at least 1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *retention < 1 {
		return errors.New("skiff etcd snapshot prune: --etcd-snapshot-retention N (at least 1) is required")
	}
	if *dir == "" {
		*dir = cluster.DefaultSnapshotDir(*dataDir)
	}
	ctx, stop := commandContext()
	defer stop()
	removed, apiErr, err := cluster.PruneEtcdSnapshots(ctx, *dataDir, *dir, *retention)
	for _, r := range removed {
		fmt.Fprintf(stdout, "pruned %s\n", r)
	}
	if err != nil {
		return err
	}
	if apiErr != nil {
		fmt.Fprintf(stderr, "the cluster's snapshot index was not updated: %v\n", apiErr)
	}
	fmt.Fprintf(stdout, "%d pruned, retention %d\n", len(removed), *retention)
	return nil
}
