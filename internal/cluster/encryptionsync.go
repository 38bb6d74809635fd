package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/storage/value"
)

// encryptionSyncInterval is how often a control-plane node compares its encryption configuration
// with the cluster's copy; a rotation step waits about this long for the other nodes.
const encryptionSyncInterval = 5 * time.Second

// encryptionSyncRole keeps the encryption configuration skiff keeps for this node equal to the
// cluster's copy in the keys Secret, which `skiff secrets-encrypt rotate` changes step by step on
// any control-plane node. The copy is read through this node's API server, and when that cannot
// open it (the node was down while a rotation dropped the key it has) through a peer API server
// its balancer knows, which can.
func (n *Node) encryptionSyncRole() role {
	return role{name: "encryption config sync", run: func(ctx context.Context) error {
		rc, own, err := n.loopbackClient()
		if err != nil {
			return err
		}
		s := &encryptionSync{
			own: own, peerConfig: rc, path: n.encryption.path, peers: n.peerAPIServers,
			log: n.cfg.Logger.With("component", "encryption-config-sync"),
		}
		everyTick(ctx, clock.RealClock{}, encryptionSyncInterval, s.once)
		return nil
	}}
}

// peerAPIServers are the API servers other than this node's: the one it joined through
// (--server) and those its balancer learned from the "kubernetes" endpoints.
func (n *Node) peerAPIServers() []string {
	seen := map[string]bool{net.JoinHostPort(n.cfg.AdvertiseAddress, strconv.Itoa(n.cfg.HTTPSPort)): true}
	if u, err := url.Parse(n.cfg.LocalURL()); err == nil {
		seen[u.Host] = true
	}
	var candidates []string
	if u, err := url.Parse(n.cfg.Server); err == nil && u.Host != "" {
		candidates = append(candidates, u.Host)
	}
	if n.lb != nil {
		for _, b := range n.lb.b.Backends() {
			candidates = append(candidates, b.Addr)
		}
	}
	var peers []string
	for _, c := range candidates {
		if !seen[c] {
			seen[c] = true
			peers = append(peers, c)
		}
	}
	return peers
}

type encryptionSync struct {
	own        kubernetes.Interface
	peerConfig *rest.Config
	// peers are the other API servers (host:port).
	peers func() []string
	path  string
	log   *slog.Logger
}

// once copies the cluster's configuration over this node's file if they differ.
func (s *encryptionSync) once(ctx context.Context) {
	cluster, source, err := s.fetch(ctx)
	if err != nil {
		s.log.Warn("cannot read the cluster's encryption configuration", "err", err)
		return
	}
	local, err := os.ReadFile(s.path)
	if err != nil {
		s.log.Warn("read the encryption configuration", "err", err)
		return
	}
	write, err := encryptionSyncDecision(local, cluster)
	if err != nil {
		s.log.Warn("the cluster's encryption configuration is not one skiff wrote; keeping this node's", "source", source, "err", err)
		return
	}
	if write == nil {
		return
	}
	if err := pki.WriteFileAtomic(s.path, write, 0o600); err != nil {
		s.log.Warn("write the encryption configuration", "err", err)
		return
	}
	key, _ := value.WritingKey(write)
	s.log.Info("encryption configuration updated from the cluster's copy", "source", source, "writingKey", key)
}

// encryptionSyncDecision is what to write over the node's configuration local: the cluster's
// copy when there is one and it differs; nil otherwise. A copy that is not a configuration skiff
// writes is an error and is never put in force.
func encryptionSyncDecision(local, cluster []byte) ([]byte, error) {
	if cluster == nil || bytes.Equal(local, cluster) {
		return nil, nil
	}
	if _, err := value.WritingKey(cluster); err != nil {
		return nil, err
	}
	if _, err := value.Parse(cluster); err != nil {
		return nil, err
	}
	return cluster, nil
}

// fetch reads the cluster's copy through this node's API server, else through the first peer
// that answers; it says where it came from.
func (s *encryptionSync) fetch(ctx context.Context) ([]byte, string, error) {
	ownCtx, cancel := context.WithTimeout(ctx, encryptionSyncInterval)
	defer cancel()
	data, ownErr := join.ClusterEncryptionConfig(ownCtx, s.own)
	if ownErr == nil {
		return data, "this node", nil
	}
	peers := s.peers()
	peerErrs := make([]error, 0, len(peers)+1)
	for _, peer := range peers {
		rc := rest.CopyConfig(s.peerConfig)
		rc.Host = "https://" + peer
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			peerErrs = append(peerErrs, fmt.Errorf("%s: %w", peer, err))
			continue
		}
		peerCtx, cancel := context.WithTimeout(ctx, encryptionSyncInterval)
		data, err := join.ClusterEncryptionConfig(peerCtx, client)
		cancel()
		if err == nil {
			return data, peer, nil
		}
		peerErrs = append(peerErrs, fmt.Errorf("%s: %w", peer, err))
	}
	if len(peers) == 0 {
		peerErrs = append(peerErrs, errors.New("no peer API server known"))
	}
	return nil, "", fmt.Errorf("this node: %w; peers: %w", ownErr, errors.Join(peerErrs...))
}
