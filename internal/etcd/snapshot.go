package etcd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// SnapshotStatus describes a snapshot file: the revision it holds, its keys and size.
type SnapshotStatus struct {
	Revision  int64
	TotalKeys int
	TotalSize int64
}

// SaveSnapshot streams a consistent snapshot of the member client is connected to into path. The
// file appears only once complete and verified (etcd's integrity hash), so an interrupted save
// never leaves a file that looks like a backup.
func SaveSnapshot(ctx context.Context, client *clientv3.Client, path string, log *slog.Logger) (SnapshotStatus, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".part-*")
	if err != nil {
		return SnapshotStatus{}, fmt.Errorf("create snapshot file: %w", err)
	}
	defer os.Remove(tmp.Name())
	stream, err := client.Snapshot(ctx)
	if err != nil {
		tmp.Close()
		return SnapshotStatus{}, fmt.Errorf("request snapshot: %w", err)
	}
	defer stream.Close()
	if _, err := io.Copy(tmp, stream); err != nil {
		tmp.Close()
		return SnapshotStatus{}, fmt.Errorf("receive snapshot: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return SnapshotStatus{}, fmt.Errorf("write snapshot: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return SnapshotStatus{}, fmt.Errorf("write snapshot: %w", err)
	}
	st, err := snapshotManager(log).Status(tmp.Name())
	if err != nil {
		return SnapshotStatus{}, fmt.Errorf("verify snapshot: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return SnapshotStatus{}, fmt.Errorf("move snapshot into %s: %w", path, err)
	}
	return SnapshotStatus{Revision: st.Revision, TotalKeys: st.TotalKey, TotalSize: st.TotalSize}, nil
}

// RestoreRevisionBump is how far a restore moves the store's revision past the snapshot's, with
// every revision up to the new one marked compacted (etcd's --bump-revision and --mark-compacted,
// the values Kubernetes' documentation gives for a restore under API servers). The cluster the
// snapshot came from went on writing after it; those revisions named objects the restored store
// no longer has. Without the bump the restored store hands the same numbers out again for other
// writes: a client holding resourceVersion R (a watch, an informer, a precondition) would resume
// from R into a different history, silently. With it every resourceVersion after the restore is
// above every one before it (unless the old cluster wrote more than a billion revisions after the
// snapshot), and a watch from before the restore gets 410 Gone and relists.
const RestoreRevisionBump = 1_000_000_000

// RestoreSnapshot builds a new single-member etcd data dir at dataDir from the snapshot at path:
// the member is named name and advertises peerURL, as the node that starts on it will. The
// store's revision is RestoreRevisionBump past the snapshot's, the revisions between compacted.
// dataDir must not exist yet (etcd refuses to overwrite one).
func RestoreSnapshot(path, dataDir, name, peerURL string, log *slog.Logger) error {
	if _, err := os.Stat(dataDir); err == nil {
		return fmt.Errorf("restore snapshot: %s exists; restore into a new data dir", dataDir)
	}
	mgr := snapshotManager(log)
	if _, err := mgr.Status(path); err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	err := mgr.Restore(snapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                name,
		OutputDataDir:       dataDir,
		PeerURLs:            []string{peerURL},
		InitialCluster:      name + "=" + peerURL,
		InitialClusterToken: DefaultInitialClusterToken,
		RevisionBump:        RestoreRevisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		return fmt.Errorf("restore snapshot %s into %s: %w", path, dataDir, err)
	}
	return nil
}

func snapshotManager(log *slog.Logger) snapshot.Manager {
	if log == nil {
		return snapshot.NewV3(zap.NewNop())
	}
	return snapshot.NewV3(zap.New(&slogCore{log: log.With("component", "etcd"), minLevel: zap.WarnLevel}))
}
