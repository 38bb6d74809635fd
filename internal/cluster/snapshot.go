package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/nodelock"
)

// etcdEndpointsFile records, in a node's data dir, the etcd client URLs its API server uses, so
// that `skiff etcd snapshot save --data-dir D` reaches the running node's store without flags.
const etcdEndpointsFile = "etcd-endpoints"

// recordEtcdEndpoints writes the node's etcd client URLs into its data dir.
func recordEtcdEndpoints(dataDir string, urls []string) error {
	return os.WriteFile(filepath.Join(dataDir, etcdEndpointsFile), []byte(strings.Join(urls, "\n")+"\n"), 0o600)
}

// SaveEtcdSnapshot writes a snapshot of the running node's etcd (embedded or external) to file.
func SaveEtcdSnapshot(ctx context.Context, dataDir, file string) (etcd.SnapshotStatus, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, etcdEndpointsFile))
	if errors.Is(err, os.ErrNotExist) {
		return etcd.SnapshotStatus{}, fmt.Errorf("no node has run on data dir %s (it has no %s)", dataDir, etcdEndpointsFile)
	}
	if err != nil {
		return etcd.SnapshotStatus{}, fmt.Errorf("read etcd endpoints: %w", err)
	}
	files, err := readEtcdClientTLS(dataDir)
	if err != nil {
		return etcd.SnapshotStatus{}, err
	}
	client, err := etcd.NewClientWithFiles(strings.Fields(string(data)), etcd.ClientFiles(files), nil)
	if err != nil {
		return etcd.SnapshotStatus{}, err
	}
	defer client.Close()
	st, err := etcd.SaveSnapshot(ctx, client, file, nil)
	if err != nil {
		return st, fmt.Errorf("snapshot of the etcd of the node on %s (is it running?): %w", dataDir, err)
	}
	return st, nil
}

// RestoreEtcdSnapshot prepares cfg's data dir, which must hold no etcd data yet, so that `skiff
// server` with the same data dir, node name and etcd peer port starts with every object of the
// snapshot. The snapshot holds the store only: copy pki/ from the old data dir to keep the
// cluster's CA, service-account key and kubeconfigs valid; without it the node makes new ones.
func RestoreEtcdSnapshot(cfg Config, file string) error {
	cfg.Default()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	lock, err := nodelock.Acquire(cfg.DataDir)
	if err != nil {
		return err
	}
	defer lock.Release()
	return etcd.RestoreSnapshot(file, filepath.Join(cfg.DataDir, "etcd"), etcdMemberName(cfg), etcdPeerURL(cfg), cfg.Logger)
}

// etcdMemberName is the name of a node's embedded etcd member.
func etcdMemberName(cfg Config) string {
	if cfg.NodeName == "" {
		return etcd.DefaultName
	}
	return cfg.NodeName
}
