package cluster

import (
	"context"
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/pki"
)

// An embedded etcd member reads the CAs it trusts (pki/etcd/ca.crt, for its clients and its
// peers) once, when it starts; its own key pairs it reads at every handshake. So when an etcd CA
// rotation changes which CAs the bundle holds (the trust and retire phases), the member restarts
// to take them: the node compares the bundle with the one its member started with every
// etcdTrustInterval, and restarts the member in turn with the other members
// (etcd.Member.RestartInTurn) when they differ. The sign phase only reorders the bundle and
// restarts nothing. The API server's etcd client follows the bundle without a restart
// (etcd.NewClientWithFiles).

// etcdTrustInterval is how often a node compares its etcd CA bundle with its member's.
const etcdTrustInterval = 5 * time.Second

// sameTrust reports whether two CA bundles trust the same CAs (pure): the order, which says
// which CA signs, does not change what a member accepts.
func sameTrust(a, b []*x509.Certificate) bool {
	has := func(set []*x509.Certificate) func(*x509.Certificate) bool {
		return func(c *x509.Certificate) bool { return slices.ContainsFunc(set, c.Equal) }
	}
	for _, c := range a {
		if !has(b)(c) {
			return false
		}
	}
	for _, c := range b {
		if !has(a)(c) {
			return false
		}
	}
	return true
}

// readTrust reads the certificates of a CA bundle file.
func readTrust(file string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return pki.ParseCertificates(data)
}

// etcdTrustFollower restarts a member when its CA bundle changes.
type etcdTrustFollower struct {
	member *etcd.Member
	client *clientv3.Client
	file   string
	// started is the bundle the member runs with.
	started []*x509.Certificate
	log     *slog.Logger
}

// newEtcdTrustFollower notes the bundle the member just started with.
func newEtcdTrustFollower(member *etcd.Member, client *clientv3.Client, dataDir string, log *slog.Logger) (*etcdTrustFollower, error) {
	file := filepath.Join(dataDir, "pki", etcdPKIDir, "ca.crt")
	started, err := readTrust(file)
	if err != nil {
		return nil, err
	}
	return &etcdTrustFollower{member: member, client: client, file: file, started: started, log: log}, nil
}

// run checks every etcdTrustInterval until ctx ends.
func (f *etcdTrustFollower) run(ctx context.Context, clk clock.WithTicker) {
	everyTick(ctx, clk, etcdTrustInterval, f.check)
}

// check restarts the member in turn when the bundle on disk trusts other CAs than it runs with.
func (f *etcdTrustFollower) check(ctx context.Context) {
	onDisk, err := readTrust(f.file)
	if err != nil {
		f.log.Warn("cannot read the etcd CA bundle", "file", f.file, "err", err)
		return
	}
	if sameTrust(f.started, onDisk) {
		return
	}
	f.log.Info("the etcd CA bundle changed: restarting the etcd member to trust it, in turn with the other members", "trusted", len(onDisk), "was", len(f.started))
	began := time.Now()
	if err := f.member.RestartInTurn(ctx, f.client); err != nil {
		f.log.Warn("etcd member restart for its new CA bundle; tried again", "err", err)
		return
	}
	f.started = onDisk
	f.log.Info("etcd member restarted with its new CA bundle", "took", time.Since(began).Round(time.Millisecond))
}
