package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/etcdapi"
	"github.com/skiff-sh/skiff/internal/etcdsnapshot"
)

// clusterResetFile records, in the data dir, the snapshot a cluster reset restored: a restart
// with --cluster-reset --restore-from still on the command line (a systemd unit not edited yet)
// must not throw away what the cluster wrote since.
const clusterResetFile = "etcd-cluster-reset"

// movedAsideLayout dates the directory old etcd data is moved to (etcd-old-<time>).
const movedAsideLayout = "20060102T150405Z"

// clusterResetRecord is clusterResetFile's content.
type clusterResetRecord struct {
	Snapshot   string    `json:"snapshot"`
	SHA256     string    `json:"sha256"`
	At         time.Time `json:"at"`
	MovedAside string    `json:"movedAside,omitempty"`
}

// clusterResetPlan is what a cluster reset does on this node.
type clusterResetPlan struct {
	// Skip: this data dir was reset from this very snapshot already.
	Skip bool
	// MoveAside is where the old etcd data goes ("" when there is none).
	MoveAside string
}

// planClusterReset decides a cluster reset: nothing when the data dir was reset from the same
// snapshot (same checksum) before and holds etcd data since; otherwise the old etcd data, if any,
// is moved to a dated directory (never deleted) and the snapshot restored in its place.
func planClusterReset(dataDir string, etcdExists bool, prev *clusterResetRecord, sum string, now time.Time) clusterResetPlan {
	if prev != nil && prev.SHA256 == sum && etcdExists {
		return clusterResetPlan{Skip: true}
	}
	if !etcdExists {
		return clusterResetPlan{}
	}
	return clusterResetPlan{MoveAside: movedAsideDir(dataDir, now)}
}

// movedAsideDir is where etcd data moved aside at now goes.
func movedAsideDir(dataDir string, now time.Time) string {
	return filepath.Join(dataDir, "etcd-old-"+now.UTC().Format(movedAsideLayout))
}

// resetEtcdCluster carries out --cluster-reset --restore-from FILE before the embedded member
// starts: the member then starts as a one-member cluster holding the snapshot's data, with the
// node's name, addresses and PKI unchanged.
func resetEtcdCluster(cfg Config, now time.Time) error {
	file := cfg.Snapshots.RestoreFrom
	if err := etcdsnapshot.VerifyChecksum(file); err != nil {
		return fmt.Errorf("cluster reset: %w", err)
	}
	sum, err := etcdsnapshot.FileSHA256(file)
	if err != nil {
		return fmt.Errorf("cluster reset: %w", err)
	}
	etcdDir := filepath.Join(cfg.DataDir, "etcd")
	_, statErr := os.Stat(etcdDir)
	prev, err := readClusterResetRecord(cfg.DataDir)
	if err != nil {
		return err
	}
	plan := planClusterReset(cfg.DataDir, statErr == nil, prev, sum, now)
	if plan.Skip {
		cfg.Logger.Warn("this node was reset from this snapshot already; starting on its data (remove --cluster-reset and --restore-from)", "snapshot", file, "at", prev.At)
		return nil
	}
	if plan.MoveAside != "" {
		if err := os.Rename(etcdDir, plan.MoveAside); err != nil {
			return fmt.Errorf("cluster reset: move the old etcd data aside: %w", err)
		}
		cfg.Logger.Warn("old etcd data moved aside", "from", etcdDir, "to", plan.MoveAside)
	}
	if err := etcd.RestoreSnapshot(file, etcdDir, etcdMemberName(cfg), etcdPeerURL(cfg), cfg.Logger); err != nil {
		return fmt.Errorf("cluster reset: %w", err)
	}
	rec := clusterResetRecord{Snapshot: file, SHA256: sum, At: now.UTC(), MovedAside: plan.MoveAside}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("cluster reset record: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.DataDir, clusterResetFile), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("cluster reset record: %w", err)
	}
	cfg.Logger.Warn("cluster reset: etcd is a new one-member cluster with the snapshot's data; "+
		"on every other control plane, stop skiff and start it again with --server pointing here: it finds it is no member, moves its etcd data aside and joins",
		"snapshot", file, "member", etcdMemberName(cfg), "peerURL", etcdPeerURL(cfg), "server", fmt.Sprintf("https://%s:%d", cfg.AdvertiseAddress, cfg.HTTPSPort))
	return nil
}

func readClusterResetRecord(dataDir string) (*clusterResetRecord, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, clusterResetFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", clusterResetFile, err)
	}
	var rec clusterResetRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("read %s: %w", clusterResetFile, err)
	}
	return &rec, nil
}

// memberRemoved decides, from the member list of the cluster this node joins, whether its own
// member (by name or peer URL) is gone: the cluster was reset from a snapshot, or the member was
// removed. A member added but not started yet has no name, hence the peer URL.
func memberRemoved(members []etcdapi.Member, name, peerURL string) bool {
	for _, m := range members {
		if m.Name == name || slices.Contains(m.PeerURLs, peerURL) {
			return false
		}
	}
	return true
}

// membershipCheckTimeout bounds the look at the joined cluster's members before a member with
// data starts: when that cluster does not answer (every node restarting at once), the member
// starts on its own data as it always did.
const membershipCheckTimeout = 10 * time.Second

// rejoinIfRemoved looks, before a member with data starts, whether the cluster behind --server
// still has it. If it does not (a cluster reset, or `skiff etcd member remove`), the old data
// would start a second cluster, or a member the others refuse: it is moved to a dated directory
// and the answer is true, so the member joins afresh. Any doubt (no answer, no credentials)
// keeps the data.
func (n *Node) rejoinIfRemoved(ctx context.Context, ecfg *etcd.Config, log *slog.Logger) bool {
	restCfg, err := n.etcdJoinCredentials()
	if err != nil {
		log.Debug("not checking etcd membership before start", "err", err)
		return false
	}
	api, err := etcdapi.NewClient(restCfg)
	if err != nil {
		return false
	}
	lctx, cancel := context.WithTimeout(ctx, membershipCheckTimeout)
	defer cancel()
	list, err := api.List(lctx)
	if err != nil {
		log.Info("etcd membership not known; starting on the member's own data", "server", restCfg.Host, "err", err)
		return false
	}
	if !memberRemoved(list.Members, ecfg.Name, ecfg.AdvertisePeerURLs[0]) {
		return false
	}
	aside := movedAsideDir(n.cfg.DataDir, time.Now())
	if err := os.Rename(ecfg.DataDir, aside); err != nil {
		log.Error("this node's etcd member is no longer in the cluster, and its data could not be moved aside", "err", err)
		return false
	}
	log.Warn("this node's etcd member is no longer in the cluster (reset or removed): its data moved aside, joining afresh",
		"member", ecfg.Name, "server", restCfg.Host, "movedTo", aside)
	return true
}

// adminAt is the node's admin kubeconfig pointed at server: a control plane that rejoins holds
// the cluster's CA, so its admin credentials are good at every API server of the cluster.
func adminAt(cfg *Config) (*rest.Config, error) {
	path := cfg.AdminKubeconfigPath()
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return clientcmd.BuildConfigFromFlags(cfg.Server, path)
}
