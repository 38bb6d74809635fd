package cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/pki"
)

// Renewal keeps every leaf certificate a node issues itself valid while the node runs: the API
// server's serving pairs, the component clients', the kubelet's, the front proxy's and etcd's.
// The certificates are found on disk (<data-dir>/pki and pki/etcd), each with the CA of the node
// that signed it, and re-issued from themselves (subject, names, addresses, usages, key
// algorithm) when renewalPlan says so. Whatever uses them reads them through holders that reload
// changed files at the next handshake (pki.KeyPairHolder, and etcd's own per-handshake reads),
// so nothing restarts. A joined worker holds no CA key: its certificates come from the API
// through CSRs (join.go), which this leaves alone.

// Renewal's bounds on how long the loop sleeps: it wakes at the next leaf's renewal time, but at
// least every renewalMaxWait (to see leaves and CAs that appeared, or a rotation done by hand)
// and at most every renewalMinWait (a leaf that failed to renew is retried without spinning).
const (
	renewalMinWait = time.Second
	renewalMaxWait = time.Hour
)

// managedCert is one leaf certificate the node can renew.
type managedCert struct {
	// name is its file under <data-dir>/pki without .crt: apiserver, apiserver-rsa, etcd/peer.
	name                string
	notBefore, notAfter time.Time
	// staleIssuer: a CA of the bundle signed it that no longer signs (a CA rotation's old one).
	staleIssuer bool
}

// renewal is one leaf to re-issue and why.
type renewal struct {
	name, reason string
}

// renewalPlan decides which leaves to re-issue at now: those a CA signed that no longer signs (a
// CA rotation's old CA: the node's own leaves converge on the new one at its next pass), those
// past two thirds of their validity (pki.RenewAt), and, when lifetime is set, those issued for longer than it (the lifetime was
// shortened since: they converge at once instead of in months).
func renewalPlan(now time.Time, certs []managedCert, lifetime time.Duration) []renewal {
	var out []renewal
	for _, c := range certs {
		cert := &x509.Certificate{NotBefore: c.notBefore, NotAfter: c.notAfter}
		switch at := pki.RenewAt(cert); {
		case c.staleIssuer:
			out = append(out, renewal{name: c.name, reason: "signed by a CA that no longer signs (CA rotation)"})
		case !now.Before(c.notAfter):
			out = append(out, renewal{name: c.name, reason: "expired " + c.notAfter.UTC().Format(time.RFC3339)})
		case !now.Before(at):
			out = append(out, renewal{name: c.name, reason: "two thirds of its lifetime passed at " + at.UTC().Format(time.RFC3339)})
		case lifetime > 0 && pki.Lifetime(cert) > lifetime+lifetime/100:
			out = append(out, renewal{name: c.name, reason: fmt.Sprintf("issued for %s, longer than the lifetime %s", pki.Lifetime(cert).Round(time.Second), lifetime)})
		}
	}
	return out
}

// nextRenewalCheck is how long the loop sleeps after a pass at now: until the first leaf's
// renewal time, within renewalMinWait and renewalMaxWait.
func nextRenewalCheck(now time.Time, certs []managedCert) time.Duration {
	wait := renewalMaxWait
	for _, c := range certs {
		at := pki.RenewAt(&x509.Certificate{NotBefore: c.notBefore, NotAfter: c.notAfter})
		wait = min(wait, at.Sub(now))
	}
	return max(wait, renewalMinWait)
}

// leafFile is a managedCert with what renewing it takes.
type leafFile struct {
	managedCert
	dir, file string
	cert      *x509.Certificate
	ca        *pki.CA
}

// nodeCAs are the CAs in pkiDir whose keys the node holds: the cluster's, the front proxy's and
// etcd's. A joined worker has none (its ca.crt comes without a key).
func nodeCAs(pkiDir string) []*pki.CA {
	var out []*pki.CA
	for _, loc := range [][2]string{{pkiDir, "ca"}, {pkiDir, "front-proxy-ca"}, {filepath.Join(pkiDir, etcdPKIDir), "ca"}} {
		if ca, err := pki.LoadCA(loc[0], loc[1]); err == nil {
			out = append(out, ca)
		}
	}
	return out
}

// scanLeaves lists the leaf certificates in pkiDir and pkiDir/etcd that one of cas signed.
// Certificates of other issuers (files an operator configured, a joined node's CSR-issued ones
// when it holds no CA) and unreadable files are not the loop's to renew; they are in skipped.
func scanLeaves(pkiDir string, cas []*pki.CA) (leaves []leafFile, skipped []string, err error) {
	for _, dir := range []string{pkiDir, filepath.Join(pkiDir, etcdPKIDir)} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.crt"))
		if err != nil {
			return nil, nil, fmt.Errorf("list certificates in %s: %w", dir, err)
		}
		for _, p := range paths {
			rel, _ := filepath.Rel(pkiDir, p)
			name := strings.TrimSuffix(rel, ".crt")
			data, err := os.ReadFile(p)
			if err != nil {
				skipped = append(skipped, name)
				continue
			}
			cert, err := pki.ParseCertificate(data)
			if err != nil || cert.IsCA {
				continue
			}
			// A leaf of a CA the bundle still trusts but that no longer signs (a CA rotation's old
			// one) is the signer's to re-issue.
			i := slices.IndexFunc(cas, func(ca *pki.CA) bool { return ca.Signs(cert) })
			stale := i < 0
			if stale {
				i = slices.IndexFunc(cas, func(ca *pki.CA) bool { return ca.Trusts(cert) })
			}
			if i < 0 {
				skipped = append(skipped, name)
				continue
			}
			leaves = append(leaves, leafFile{
				managedCert: managedCert{name: name, notBefore: cert.NotBefore, notAfter: cert.NotAfter, staleIssuer: stale},
				dir:         dir, file: strings.TrimSuffix(filepath.Base(p), ".crt"), cert: cert, ca: cas[i],
			})
		}
	}
	return leaves, skipped, nil
}

// RenewedCertificate is one leaf re-issued.
type RenewedCertificate struct {
	Name                     string
	Path                     string
	Reason                   string
	OldSerial, NewSerial     string
	OldNotAfter, NewNotAfter time.Time
}

// renewLeaves re-issues the leaves of plan (by name, among leaves) for lifetime. The admin
// kubeconfig, which carries the admin certificate inline, is rewritten with the new one. A
// failure is reported and the others go on: each leaf has a third of its lifetime left.
func renewLeaves(dataDir string, leaves []leafFile, plan []renewal, lifetime time.Duration, now time.Time) ([]RenewedCertificate, error) {
	var out []RenewedCertificate
	var errs []error
	for _, r := range plan {
		i := slices.IndexFunc(leaves, func(l leafFile) bool { return l.name == r.name })
		if i < 0 {
			continue
		}
		l := leaves[i]
		renewed, err := l.ca.Renew(l.dir, l.file, l.cert, lifetime, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("renew %s: %w", l.name, err))
			continue
		}
		if l.name == "admin" {
			if err := refreshKubeconfigCert(filepath.Join(dataDir, "admin.kubeconfig"), l.dir, l.file); err != nil {
				errs = append(errs, err)
			}
		}
		out = append(out, RenewedCertificate{
			Name: l.name, Path: filepath.Join(l.dir, l.file+".crt"), Reason: r.reason,
			OldSerial: l.cert.SerialNumber.Text(16), NewSerial: renewed.SerialNumber.Text(16),
			OldNotAfter: l.cert.NotAfter, NewNotAfter: renewed.NotAfter,
		})
	}
	return out, errors.Join(errs...)
}

// refreshKubeconfigCert puts the pair dir/name.{crt,key} into the kubeconfig at path in place of
// every user entry that carried the pair's previous certificate (the one with the same subject).
// An absent kubeconfig is left absent.
func refreshKubeconfigCert(path, dir, name string) error {
	kc, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
	if err != nil {
		return err
	}
	cert, err := pki.ParseCertificate(certPEM)
	if err != nil {
		return err
	}
	changed := false
	for _, user := range kc.AuthInfos {
		old, err := pki.ParseCertificate(user.ClientCertificateData)
		if err != nil || old.Subject.String() != cert.Subject.String() {
			continue
		}
		user.ClientCertificateData, user.ClientKeyData = certPEM, keyPEM
		changed = true
	}
	if !changed {
		return nil
	}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return pki.WriteFileAtomic(path, data, 0o600)
}

// RotateCertificates re-issues now the leaves of the node whose data dir is dataDir: every leaf
// its CAs signed, or those named in services (a name is a file under pki without .crt, like
// apiserver or etcd/peer; a serving name also takes its RSA pair, apiserver-rsa). It works on
// the files, beside a running node or without one: the running node's holders use the new pairs
// from their next handshake. lifetime 0 keeps the default.
func RotateCertificates(dataDir string, services []string, lifetime time.Duration, now time.Time) ([]RenewedCertificate, error) {
	pkiDir := filepath.Join(dataDir, "pki")
	cas := nodeCAs(pkiDir)
	if len(cas) == 0 {
		return nil, fmt.Errorf("%s holds no CA key: a joined worker's certificates are renewed through the API (certificate signing requests), run this on a control-plane node", pkiDir)
	}
	leaves, _, err := scanLeaves(pkiDir, cas)
	if err != nil {
		return nil, err
	}
	plan, err := rotationPlan(leaves, services)
	if err != nil {
		return nil, err
	}
	return renewLeaves(dataDir, leaves, plan, lifetime, now)
}

// rotationPlan is every leaf, or the ones services name (pure); a name that matches no leaf is an
// error that lists the names there are.
func rotationPlan(leaves []leafFile, services []string) ([]renewal, error) {
	var out []renewal
	var names []string
	for _, l := range leaves {
		names = append(names, l.name)
		if len(services) == 0 || slices.Contains(services, l.name) || slices.Contains(services, strings.TrimSuffix(l.name, pki.RSASuffix)) {
			out = append(out, renewal{name: l.name, reason: "rotated on request"})
		}
	}
	for _, s := range services {
		if !slices.Contains(names, s) {
			return nil, fmt.Errorf("no certificate %q: the node's are %s", s, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// certRenewer is the node's renewal loop: renewalPlan over the leaves on disk, then sleep until
// the next one is due.
type certRenewer struct {
	dataDir  string
	lifetime time.Duration
	clock    clock.WithTicker
	log      *slog.Logger
}

// pass renews what is due at now and returns how long to sleep.
func (r *certRenewer) pass(now time.Time) time.Duration {
	pkiDir := filepath.Join(r.dataDir, "pki")
	leaves, _, err := scanLeaves(pkiDir, nodeCAs(pkiDir))
	if err != nil {
		r.log.Warn("read certificates for renewal", "err", err)
		return renewalMinWait * 30
	}
	plan := renewalPlan(now, managed(leaves), r.lifetime)
	renewed, err := renewLeaves(r.dataDir, leaves, plan, r.lifetime, now)
	for _, c := range renewed {
		r.log.Info("certificate renewed", "name", c.Name, "reason", c.Reason, "serial", c.NewSerial, "previousSerial", c.OldSerial,
			"notAfter", c.NewNotAfter.UTC().Format(time.RFC3339))
	}
	if err != nil {
		r.log.Error("certificate renewal failed; retrying", "err", err)
		return renewalMinWait * 5
	}
	if len(renewed) > 0 {
		// Sleep on what is on disk now.
		if leaves, _, err = scanLeaves(pkiDir, nodeCAs(pkiDir)); err != nil {
			return renewalMinWait * 30
		}
	}
	return nextRenewalCheck(now, managed(leaves))
}

func managed(leaves []leafFile) []managedCert {
	out := make([]managedCert, 0, len(leaves))
	for _, l := range leaves {
		out = append(out, l.managedCert)
	}
	return out
}

// run renews at once and then whenever the next leaf is due, until ctx ends.
func (r *certRenewer) run(ctx context.Context) error {
	for {
		wait := r.pass(r.clock.Now())
		t := r.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}
