package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
)

// A CA rotation runs on one control plane (`skiff certificate rotate-ca`), which publishes the
// CA's files after each phase in the keys Secret (PublishRotatedCA); every other
// control plane follows them (caSyncRole): it writes the same files into its pki directory,
// re-issues its own leaves that a CA other than the signer signed, and refreshes its
// kubeconfigs, as the phase did on the first node. A node only moves forward through a rotation
// (caFollows): the Secret lagging behind the node that rotated, for the moment between its files
// and its upload, never turns that node's rotation back.

// caSyncInterval is how often a control plane compares its CA files with the cluster's.
const caSyncInterval = 5 * time.Second

// rotationStage is where a CA state stands in a rotation from old to next: 0 the old CA alone,
// 1 both trusted with the old one signing (trust), 2 the new one signing and both trusted
// (sign), 3 the new CA alone (retire); -1 when the state is none of these.
func rotationStage(st caState, old, next *x509.Certificate) int {
	bundleIs := func(certs ...*x509.Certificate) bool {
		return slices.EqualFunc(st.bundle, certs, (*x509.Certificate).Equal)
	}
	hasNext := st.next != nil
	switch {
	case !hasNext && st.signer.Equal(old) && bundleIs(old):
		return 0
	case hasNext && st.next.Equal(next) && st.signer.Equal(old) && bundleIs(old, next):
		return 1
	case !hasNext && st.signer.Equal(next) && bundleIs(next, old):
		return 2
	case !hasNext && st.signer.Equal(next) && bundleIs(next):
		return 3
	}
	return -1
}

// caFollow is what a node does about the cluster's CA state.
type caFollow struct {
	// follow says the node takes the cluster's state.
	follow bool
	// viaSign says the node passes through the sign stage first (the cluster retired the old CA
	// while the node still signed with it): its leaves are re-issued while the old CA is still
	// trusted enough to tell them apart.
	viaSign bool
	// old and next are the rotation's two CAs.
	old, next *x509.Certificate
}

// caFollows decides whether a node at local takes the cluster's CA state: both are stages of
// one rotation (the same two CAs, one order) and the cluster's is further on. States of
// different rotations, or two single CAs that either could have followed, are not followed: a
// node that missed a whole rotation must rejoin.
func caFollows(local, cluster caState) caFollow {
	var certs []*x509.Certificate
	add := func(c *x509.Certificate) {
		if c == nil {
			return
		}
		for _, have := range certs {
			if have.Equal(c) {
				return
			}
		}
		certs = append(certs, c)
	}
	for _, st := range []caState{local, cluster} {
		for _, c := range st.bundle {
			add(c)
		}
		add(st.signer)
		add(st.next)
	}
	if len(certs) != 2 {
		return caFollow{}
	}
	var out caFollow
	backward := false
	for _, order := range [][2]*x509.Certificate{{certs[0], certs[1]}, {certs[1], certs[0]}} {
		l, c := rotationStage(local, order[0], order[1]), rotationStage(cluster, order[0], order[1])
		switch {
		case l < 0 || c < 0:
		case c > l:
			out = caFollow{follow: true, viaSign: c == 3 && l < 2, old: order[0], next: order[1]}
		case c < l:
			backward = true
		}
	}
	if backward {
		return caFollow{}
	}
	return out
}

// caStateOf is the rotation state of a CA's files.
func caStateOf(ca join.CAFiles) (caState, error) {
	cur, err := pki.NewCA(ca.Cert, ca.Key)
	if err != nil {
		return caState{}, fmt.Errorf("ca.crt and ca.key: %w", err)
	}
	st := caState{bundle: cur.Bundle, signer: cur.Cert}
	if len(ca.NextCert) > 0 || len(ca.NextKey) > 0 {
		next, err := pki.NewCA(ca.NextCert, ca.NextKey)
		if err != nil {
			return caState{}, fmt.Errorf("ca-next.crt and ca-next.key: %w", err)
		}
		st.next = next.Cert
	}
	return st, nil
}

// followCA puts the cluster's files f of a CA in the node's pki directory when caFollows says
// so, then re-issues the node's leaves the new signer did not sign and refreshes its
// kubeconfigs (for the cluster CA). It reports whether it followed.
func followCA(dataDir string, f caFiles, cluster join.CAFiles, now time.Time) (bool, []RenewedCertificate, error) {
	pkiDir := filepath.Join(dataDir, "pki")
	local, err := join.ReadCAFiles(pkiDir, f.name, f.next)
	if err != nil {
		return false, nil, err
	}
	if sameCAFiles(local, cluster) {
		return false, nil, nil
	}
	localSt, err := caStateOf(local)
	if err != nil {
		return false, nil, fmt.Errorf("this node's %s: %w", f.name, err)
	}
	clusterSt, err := caStateOf(cluster)
	if err != nil {
		return false, nil, fmt.Errorf("the cluster's %s in the keys Secret: %w", f.name, err)
	}
	decision := caFollows(localSt, clusterSt)
	if !decision.follow {
		return false, nil, nil
	}
	var renewed []RenewedCertificate
	if decision.viaSign {
		sign := join.CAFiles{Cert: encodeCerts([]*x509.Certificate{decision.next, decision.old}), Key: cluster.Key}
		if err := writeCAFiles(pkiDir, f, sign); err != nil {
			return false, nil, err
		}
		r, err := renewStaleLeaves(dataDir, now)
		if renewed = r; err != nil {
			return true, renewed, err
		}
	}
	if err := writeCAFiles(pkiDir, f, cluster); err != nil {
		return false, renewed, err
	}
	r, err := renewStaleLeaves(dataDir, now)
	if renewed = append(renewed, r...); err != nil || !f.kubeconfigs {
		return true, renewed, err
	}
	return true, renewed, refreshKubeconfigCAs(dataDir, cluster.Cert)
}

func sameCAFiles(a, b join.CAFiles) bool {
	return bytes.Equal(a.Cert, b.Cert) && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.NextCert, b.NextCert) && bytes.Equal(a.NextKey, b.NextKey)
}

// writeCAFiles writes ca as the files f: the next CA first (or removes it), then the key, then
// the bundle, so that at every moment the bundle holds the certificate of the key.
func writeCAFiles(pkiDir string, f caFiles, ca join.CAFiles) error {
	nextCrt, nextKey := filepath.Join(pkiDir, f.next+".crt"), filepath.Join(pkiDir, f.next+".key")
	if len(ca.NextCert) > 0 {
		if err := errors.Join(pki.WriteFileAtomic(nextKey, ca.NextKey, 0o600), pki.WriteFileAtomic(nextCrt, ca.NextCert, 0o600)); err != nil {
			return err
		}
	} else if err := removeNextCA(pkiDir, f); err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(filepath.Join(pkiDir, f.name+".key"), ca.Key, 0o600); err != nil {
		return err
	}
	return pki.WriteFileAtomic(filepath.Join(pkiDir, f.name+".crt"), ca.Cert, 0o644)
}

// PublishRotatedCA puts the node's files of the CA kind in the keys Secret through its admin
// kubeconfig, for the other control planes to follow; false when there is no Secret (no other
// control plane was ever invited).
func PublishRotatedCA(ctx context.Context, dataDir string, kind CAKind) (bool, error) {
	f, err := kind.files()
	if err != nil {
		return false, err
	}
	ca, err := join.ReadCAFiles(filepath.Join(dataDir, "pki"), f.name, f.next)
	if err != nil {
		return false, err
	}
	client, err := adminClient(filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		return false, err
	}
	return join.PublishCAFiles(ctx, client, f.name, f.next, ca)
}

// caSyncRole keeps a control plane's CA files with the cluster's (followCA), read
// through its own API server, and the CA bundles extension API servers read with the files
// (syncExtensionAuthCAs).
func (n *Node) caSyncRole() role {
	return role{name: "cluster CA sync", run: func(ctx context.Context) error {
		_, client, err := n.loopbackClient()
		if err != nil {
			return err
		}
		log := n.cfg.Logger.With("component", "cluster-ca-sync")
		everyTick(ctx, clock.RealClock{}, caSyncInterval, func(ctx context.Context) {
			syncCAsOnce(ctx, client, n.cfg.DataDir, log, CAKinds)
			updated, err := syncExtensionAuthCAs(ctx, client, &n.cfg)
			switch {
			case err != nil:
				log.Warn("cannot bring extension-apiserver-authentication to the node's CA files", "err", err)
			case updated:
				log.Info("extension-apiserver-authentication carries the node's CA bundles")
			}
		})
		return nil
	}}
}

// everyTick runs step at once and then every interval until ctx ends.
func everyTick(ctx context.Context, clk clock.WithTicker, interval time.Duration, step func(context.Context)) {
	ticker := clk.NewTicker(interval)
	defer ticker.Stop()
	for {
		step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// etcdCASyncRole keeps an etcd-only node's etcd CA files with the cluster's, read through its
// admin kubeconfig (it has no API server of its own): its member's certificates are re-issued
// with the rotation's phases and its member restarts to trust the new bundle as the control
// planes' do (etcdTrustFollower).
func etcdCASyncRole(cfg *Config) role {
	return role{name: "etcd CA sync", run: func(ctx context.Context) error {
		client, err := adminClient(cfg.AdminKubeconfigPath())
		if err != nil {
			return err
		}
		log := cfg.Logger.With("component", "cluster-ca-sync")
		everyTick(ctx, clock.RealClock{}, caSyncInterval, func(ctx context.Context) {
			syncCAsOnce(ctx, client, cfg.DataDir, log, []CAKind{CAKindEtcd})
		})
		return nil
	}}
}

// syncCAsOnce follows the cluster's copy of every CA of kinds, read in one request.
func syncCAsOnce(ctx context.Context, client kubernetes.Interface, dataDir string, log *slog.Logger, kinds []CAKind) {
	fetchCtx, cancel := context.WithTimeout(ctx, caSyncInterval)
	defer cancel()
	keys, err := join.ClusterKeys(fetchCtx, client)
	if err != nil {
		log.Warn("cannot read the cluster's CAs", "err", err)
		return
	}
	for _, kind := range kinds {
		f, err := kind.files()
		if err != nil {
			continue
		}
		if cluster, found := join.CAFilesOf(keys, f.name, f.next); found {
			syncCAOnce(dataDir, f, cluster, log.With("ca", f.name))
		}
	}
}

func syncCAOnce(dataDir string, f caFiles, cluster join.CAFiles, log *slog.Logger) {
	followed, renewed, err := followCA(dataDir, f, cluster, time.Now())
	for _, r := range renewed {
		log.Info("certificate re-issued by the new CA", "name", r.Name, "serial", r.NewSerial)
	}
	if err != nil {
		log.Error("follow the cluster's CA rotation", "followed", followed, "err", err)
		return
	}
	if followed {
		log.Info("cluster CA followed", "trusted", countCerts(cluster.Cert), "rotationUnderWay", len(cluster.NextCert) > 0)
	}
}

func countCerts(bundle []byte) int { return bytes.Count(bundle, []byte("-----BEGIN CERTIFICATE-----")) }

// loopbackClient is the API server's loopback identity (system:apiserver in system:masters) to its
// own server, for the control plane's own loops.
func (n *Node) loopbackClient() (*rest.Config, kubernetes.Interface, error) {
	rc, err := componentRESTConfig(&n.cfg, "system:apiserver", []string{"system:masters"}, time.Now())
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	return rc, client, nil
}
