package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/etcd"
	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/pki"
)

// CA rotation replaces the cluster CA (<data-dir>/pki/ca.crt and ca.key) of a running cluster in
// the three phases of Kubernetes' manual procedure, each a separate run of `skiff certificate
// rotate-ca` so the operator can let every node and client take one phase before the next:
//
//   - trust: a new CA is made (pki/ca-next.crt and ca-next.key) and added to ca.crt after the old
//     one, which still signs. Everything that verifies with the cluster CA reads ca.crt through a
//     trust pool that reloads it (pki.PoolHolder), so from the next handshake both CAs are trusted;
//     the kubeconfigs in the data dir carry the bundle.
//   - sign: the new CA goes first in ca.crt and its key becomes ca.key, so the node (and every
//     holder of the CA, such as the controller manager's CSR signer) signs with it; every leaf the
//     old CA signed is re-issued by the new one at once (the node's renewal loop does the same
//     for leaves it finds still signed by a CA of the bundle that no longer signs).
//   - retire: the old CA leaves ca.crt, refused from the next handshake. It is refused while a
//     leaf of the node is still signed by it.
//
// caRotationPlan decides (pure, from what is on disk); rotateCA carries the steps out. Each phase
// can be run again: a phase already done plans nothing but the kubeconfigs, and a phase
// interrupted between two steps is finished.

// CARotationPhase is one phase of a CA rotation.
type CARotationPhase string

// The phases, in order.
const (
	CAPhaseTrust  CARotationPhase = "trust"
	CAPhaseSign   CARotationPhase = "sign"
	CAPhaseRetire CARotationPhase = "retire"
)

// CARotationPhases are the phases in the order they are run.
var CARotationPhases = []CARotationPhase{CAPhaseTrust, CAPhaseSign, CAPhaseRetire}

// CAKind names a CA that rotate-ca rotates (--ca): the cluster CA, which signs the API servers'
// and every node's and client's certificates, the front-proxy CA, which signs the API server's
// client certificate to extension API servers (the requestheader CA), or the etcd CA, which signs
// the embedded etcd members' serving and peer certificates and the API servers' etcd client
// certificates.
type CAKind string

// The CAs rotate-ca rotates.
const (
	CAKindCluster    CAKind = "cluster"
	CAKindFrontProxy CAKind = "front-proxy"
	CAKindEtcd       CAKind = "etcd"
)

// CAKinds are the CAs rotate-ca rotates.
var CAKinds = []CAKind{CAKindCluster, CAKindFrontProxy, CAKindEtcd}

// caFiles are a rotated CA's files in <data-dir>/pki (name.crt, name.key, and next.crt,
// next.key during a rotation), and whether the kubeconfigs carry its bundle.
type caFiles struct {
	name, next  string
	kubeconfigs bool
	// etcdMembers: the CA's trust is read by etcd members when they start, so a phase waits for
	// them (caState.waiting).
	etcdMembers bool
}

// files are kind's files.
func (k CAKind) files() (caFiles, error) {
	switch k {
	case CAKindCluster:
		return caFiles{name: "ca", next: "ca-next", kubeconfigs: true}, nil
	case CAKindFrontProxy:
		return caFiles{name: "front-proxy-ca", next: "front-proxy-ca-next"}, nil
	case CAKindEtcd:
		return caFiles{name: etcdPKIDir + "/ca", next: etcdPKIDir + "/ca-next", etcdMembers: true}, nil
	}
	return caFiles{}, fmt.Errorf("unknown CA %q: one of %v", k, CAKinds)
}

// caState is what a rotation decides on: the cluster CA files as they are.
type caState struct {
	// bundle is ca.crt; signer its certificate of ca.key.
	bundle []*x509.Certificate
	signer *x509.Certificate
	// next is ca-next.crt (with its key), nil when absent.
	next *x509.Certificate
	// stale are the node's leaves signed by a CA of the bundle other than the signer.
	stale []string
	// waiting are the etcd members a phase of the etcd CA's rotation waits for: before sign, the
	// members that do not trust the next CA yet (they restart to read the trust phase's bundle,
	// one at a time); before retire, the members that still serve a certificate of the old CA.
	waiting []string
}

// caStepKind is one thing a rotation does.
type caStepKind int

const (
	// stepMakeNext writes a new CA pair as ca-next.{crt,key}.
	stepMakeNext caStepKind = iota
	// stepBundleTrustBoth writes ca.crt as the signer, then the next CA.
	stepBundleTrustBoth
	// stepBundleNextFirst writes ca.crt as the next CA, then the rest of the bundle.
	stepBundleNextFirst
	// stepSwapKey writes ca-next.key as ca.key.
	stepSwapKey
	// stepRemoveNext removes ca-next.{crt,key}.
	stepRemoveNext
	// stepRenewStale re-issues, with the signer, every leaf a CA other than it signed.
	stepRenewStale
	// stepBundleSignerOnly writes ca.crt as the signer alone.
	stepBundleSignerOnly
	// stepKubeconfigs puts ca.crt into the kubeconfigs of the data dir.
	stepKubeconfigs
)

// caStep is a step and what it is for, for the command's output.
type caStep struct {
	kind caStepKind
	why  string
}

// caRotationPlan is the steps of phase at state for the CA of files f, or why the phase cannot
// run now.
func caRotationPlan(f caFiles, phase CARotationPhase, st caState) ([]caStep, error) {
	plan, err := caRotationSteps(phase, st)
	if err != nil {
		return nil, err
	}
	out := make([]caStep, 0, len(plan))
	for _, step := range plan {
		if step.kind == stepKubeconfigs && !f.kubeconfigs {
			continue
		}
		step.why = f.named(step.why)
		out = append(out, step)
	}
	return out, nil
}

// named puts f's file names in a text written for the cluster CA's.
func (f caFiles) named(text string) string {
	return strings.NewReplacer("ca-next.", f.next+".", "ca.crt", f.name+".crt", "ca.key", f.name+".key").Replace(text)
}

// caRotationSteps is caRotationPlan in the cluster CA's file names.
func caRotationSteps(phase CARotationPhase, st caState) ([]caStep, error) {
	nextTrusted := st.next != nil && slices.ContainsFunc(st.bundle, st.next.Equal)
	nextSigns := st.next != nil && st.next.Equal(st.signer)
	kubeconfigs := caStep{stepKubeconfigs, "the kubeconfigs carry ca.crt"}
	switch phase {
	case CAPhaseTrust:
		switch {
		case nextSigns:
			return nil, errors.New("phase sign was interrupted (ca.key is already ca-next.key): run --phase sign again")
		case st.next == nil && len(st.bundle) > 1:
			return nil, fmt.Errorf("ca.crt already holds %d CAs and there is no ca-next.crt: phase sign is done, run --phase retire", len(st.bundle))
		case st.next == nil:
			return []caStep{
				{stepMakeNext, "a new CA, ca-next.crt"},
				{stepBundleTrustBoth, "ca.crt trusts the old CA and the new one; the old one signs"},
				kubeconfigs,
			}, nil
		case !nextTrusted:
			return []caStep{{stepBundleTrustBoth, "ca.crt trusts the old CA and ca-next.crt; the old one signs"}, kubeconfigs}, nil
		default:
			return []caStep{kubeconfigs}, nil
		}
	case CAPhaseSign:
		switch {
		case st.next != nil && !nextTrusted:
			return nil, errors.New("ca-next.crt is not in ca.crt yet: run --phase trust first")
		case st.next == nil && len(st.bundle) < 2:
			return nil, errors.New("no rotation under way (ca.crt holds one CA and there is no ca-next.crt): run --phase trust first")
		case st.next == nil:
			// Done before; leaves still signed by the old CA are re-issued.
			return []caStep{{stepRenewStale, "leaves signed by the old CA are re-issued by the new one"}, kubeconfigs}, nil
		case len(st.waiting) > 0:
			return nil, fmt.Errorf("etcd members that do not trust ca-next.crt yet: %s (each restarts to read ca.crt, one at a time, within a minute of taking the trust phase): run --phase sign again then", strings.Join(st.waiting, ", "))
		}
		out := []caStep{{stepBundleNextFirst, "the new CA first in ca.crt"}}
		if !nextSigns {
			out = append(out, caStep{stepSwapKey, "ca.key is the new CA's key: the new CA signs"})
		}
		return append(out,
			caStep{stepRemoveNext, "ca-next.{crt,key} are ca.crt's first certificate and ca.key now"},
			caStep{stepRenewStale, "leaves signed by the old CA are re-issued by the new one"},
			kubeconfigs), nil
	case CAPhaseRetire:
		switch {
		case st.next != nil:
			return nil, errors.New("the new CA does not sign yet (ca-next.crt is there): run --phase sign first")
		case len(st.stale) > 0:
			return nil, fmt.Errorf("certificates still signed by the old CA: %s; run --phase sign again", strings.Join(st.stale, ", "))
		case len(st.waiting) > 0:
			return nil, fmt.Errorf("etcd members still serving a certificate of the old CA: %s (they take the sign phase within seconds): run --phase retire again then", strings.Join(st.waiting, ", "))
		case len(st.bundle) < 2:
			return []caStep{kubeconfigs}, nil
		}
		return []caStep{{stepBundleSignerOnly, "ca.crt trusts only the new CA: the old one is refused"}, kubeconfigs}, nil
	}
	return nil, fmt.Errorf("unknown phase %q: one of %v", phase, CARotationPhases)
}

// CARotation is what a run of RotateCA did.
type CARotation struct {
	Phase CARotationPhase
	// Steps say what was done, in order.
	Steps []string
	// Trusted are the CAs in ca.crt afterwards (subject and SHA-256 pin), the signer first.
	Trusted []string
	Renewed []RenewedCertificate
}

// RotateCA runs phase of a rotation of the CA kind on the node whose data dir is dataDir, on its
// files (beside the running node, whose holders take the new files from their next handshake).
// For the etcd CA it asks the cluster's members what the phase waits on (etcdMembersWaiting).
func RotateCA(ctx context.Context, dataDir string, kind CAKind, phase CARotationPhase, now time.Time) (*CARotation, error) {
	f, err := kind.files()
	if err != nil {
		return nil, err
	}
	pkiDir := filepath.Join(dataDir, "pki")
	st, leaves, err := readCAState(pkiDir, f)
	if err != nil {
		if f.etcdMembers && errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("this node holds no etcd CA (an external etcd's CA is rotated with that etcd's own tools; then point --etcd-cafile at the new bundle): %w", err)
		}
		return nil, err
	}
	if f.etcdMembers {
		if st.waiting, err = etcdMembersWaiting(ctx, dataDir, phase, st, now); err != nil {
			return nil, fmt.Errorf("etcd CA: %w", err)
		}
	}
	plan, err := caRotationPlan(f, phase, st)
	if err != nil {
		if kind != CAKindCluster {
			err = fmt.Errorf("%s CA: %w", kind, err)
		}
		return nil, err
	}
	out := &CARotation{Phase: phase}
	for _, step := range plan {
		renewed, err := runCAStep(dataDir, f, step, leaves, now)
		out.Renewed = append(out.Renewed, renewed...)
		if err != nil {
			return out, fmt.Errorf("%s: %w", step.why, err)
		}
		out.Steps = append(out.Steps, step.why)
	}
	if st, _, err = readCAState(pkiDir, f); err == nil {
		for _, c := range st.bundle {
			out.Trusted = append(out.Trusted, fmt.Sprintf("%s sha256:%s", c.Subject.CommonName, join.CAHash(c)))
		}
	}
	return out, nil
}

// etcdMembersWaiting asks every etcd member, through a probe of its client URL, what phase waits
// on at st (caState.waiting): before sign, whether it takes a client certificate of the next CA;
// before retire, whether its certificate is the signer's. Nothing when the phase waits on none.
func etcdMembersWaiting(ctx context.Context, dataDir string, phase CARotationPhase, st caState, now time.Time) ([]string, error) {
	pkiDir := filepath.Join(dataDir, "pki")
	probe := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case phase == CAPhaseSign && st.next != nil && !st.next.Equal(st.signer):
		next, err := pki.LoadCA(pkiDir, etcdPKIDir+"/ca-next")
		if err != nil {
			return nil, err
		}
		certPEM, keyPEM, err := next.IssueFor(pki.Leaf{CommonName: "skiff-etcd-ca-probe", Client: true}, now, 10*time.Minute)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		probe.Certificates = []tls.Certificate{pair}
		probe.RootCAs = certPool(st.bundle...)
	case phase == CAPhaseRetire && st.next == nil && len(st.bundle) > 1:
		files, err := readEtcdClientTLS(dataDir)
		if err != nil {
			return nil, err
		}
		pair, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("the node's etcd client certificate: %w", err)
		}
		probe.Certificates = []tls.Certificate{pair}
		probe.RootCAs = certPool(st.signer)
	default:
		return nil, nil
	}
	members, err := etcdMemberClientURLs(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	var waiting []string
	for _, m := range members {
		if err := etcd.Probe(ctx, m.url, probe.Clone(), etcdProbeTimeout); err != nil {
			waiting = append(waiting, m.name+" ("+m.url+")")
		}
	}
	return waiting, nil
}

// etcdProbeTimeout bounds one member's probe.
const etcdProbeTimeout = 5 * time.Second

// certPool is a pool of certs.
func certPool(certs ...*x509.Certificate) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool
}

// etcdMemberURL is a member's name and first client URL.
type etcdMemberURL struct{ name, url string }

// etcdMemberClientURLs lists the cluster's started members through the etcd the node's API
// server uses (its data dir's etcd-endpoints and client files).
func etcdMemberClientURLs(ctx context.Context, dataDir string) ([]etcdMemberURL, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, etcdEndpointsFile))
	if err != nil {
		return nil, fmt.Errorf("etcd endpoints of the node: %w", err)
	}
	files, err := readEtcdClientTLS(dataDir)
	if err != nil {
		return nil, err
	}
	client, err := etcd.NewClientWithFiles(strings.Fields(string(data)), etcd.ClientFiles(files), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	defer client.Close()
	lctx, cancel := context.WithTimeout(ctx, etcdProbeTimeout)
	defer cancel()
	resp, err := client.MemberList(lctx, clientv3.WithSerializable())
	if err != nil {
		return nil, fmt.Errorf("etcd member list: %w", err)
	}
	var out []etcdMemberURL
	for _, m := range resp.Members {
		if len(m.ClientURLs) > 0 {
			out = append(out, etcdMemberURL{name: m.Name, url: m.ClientURLs[0]})
		}
	}
	return out, nil
}

// readCAState reads the files f of pkiDir and the node's leaves.
func readCAState(pkiDir string, f caFiles) (caState, []leafFile, error) {
	ca, err := pki.LoadCA(pkiDir, f.name)
	if err != nil {
		return caState{}, nil, fmt.Errorf("CA %s in %s (CA rotation runs on a control-plane node, which holds %s.key): %w", f.name, pkiDir, f.name, err)
	}
	st := caState{bundle: ca.Bundle, signer: ca.Cert}
	if next, err := pki.LoadCA(pkiDir, f.next); err == nil {
		st.next = next.Cert
	} else if !errors.Is(err, os.ErrNotExist) {
		return caState{}, nil, fmt.Errorf("next CA %s: %w; delete %s.crt and %s.key and run --phase trust again", filepath.Join(pkiDir, f.next+".crt"), err, f.next, f.next)
	}
	leaves, _, err := scanLeaves(pkiDir, nodeCAs(pkiDir))
	if err != nil {
		return caState{}, nil, err
	}
	for _, l := range leaves {
		if l.staleIssuer {
			st.stale = append(st.stale, l.name)
		}
	}
	return st, leaves, nil
}

// runCAStep carries out one step on the files f.
func runCAStep(dataDir string, f caFiles, step caStep, leaves []leafFile, now time.Time) ([]RenewedCertificate, error) {
	pkiDir := filepath.Join(dataDir, "pki")
	caCrt := filepath.Join(pkiDir, f.name+".crt")
	nextCrt, nextKey := filepath.Join(pkiDir, f.next+".crt"), filepath.Join(pkiDir, f.next+".key")
	switch step.kind {
	case stepMakeNext:
		certPEM, keyPEM, err := pki.GenerateCA("skiff-"+join.CASecretKey(f.name)+"-"+now.UTC().Format("20060102-150405"), now)
		if err != nil {
			return nil, err
		}
		// The key first: a ca-next.crt without its key would stop the next run.
		if err := pki.WriteFileAtomic(nextKey, keyPEM, 0o600); err != nil {
			return nil, err
		}
		return nil, pki.WriteFileAtomic(nextCrt, certPEM, 0o600)
	case stepBundleTrustBoth, stepBundleNextFirst, stepBundleSignerOnly:
		ca, err := pki.LoadCA(pkiDir, f.name)
		if err != nil {
			return nil, err
		}
		var next *x509.Certificate
		if step.kind != stepBundleSignerOnly {
			n, err := pki.LoadCA(pkiDir, f.next)
			if err != nil {
				return nil, err
			}
			next = n.Cert
		}
		return nil, pki.WriteFileAtomic(caCrt, encodeCerts(bundleFor(step.kind, ca.Cert, next, ca.Bundle)), 0o644)
	case stepSwapKey:
		keyPEM, err := os.ReadFile(nextKey)
		if err != nil {
			return nil, err
		}
		return nil, pki.WriteFileAtomic(filepath.Join(pkiDir, f.name+".key"), keyPEM, 0o600)
	case stepRemoveNext:
		return nil, removeNextCA(pkiDir, f)
	case stepRenewStale:
		return renewStaleLeaves(dataDir, now)
	case stepKubeconfigs:
		bundle, err := os.ReadFile(caCrt)
		if err != nil {
			return nil, err
		}
		return nil, refreshKubeconfigCAs(dataDir, bundle)
	}
	return nil, fmt.Errorf("unknown step %d", step.kind)
}

// removeNextCA removes the next CA's files of f, when they are there.
func removeNextCA(pkiDir string, f caFiles) error {
	for _, p := range []string{filepath.Join(pkiDir, f.next+".crt"), filepath.Join(pkiDir, f.next+".key")} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// bundleFor is ca.crt's certificates for a bundle step (pure): the signer then the next CA, the
// next CA then the others, or the signer alone.
func bundleFor(kind caStepKind, signer, next *x509.Certificate, bundle []*x509.Certificate) []*x509.Certificate {
	switch kind {
	case stepBundleTrustBoth:
		return []*x509.Certificate{signer, next}
	case stepBundleNextFirst:
		out := []*x509.Certificate{next}
		for _, c := range bundle {
			if !c.Equal(next) {
				out = append(out, c)
			}
		}
		return out
	default:
		return []*x509.Certificate{signer}
	}
}

// renewStaleLeaves re-issues the node's leaves that a CA of the cluster bundle signed other than
// its signer, with the signer, each for the lifetime it had.
func renewStaleLeaves(dataDir string, now time.Time) ([]RenewedCertificate, error) {
	pkiDir := filepath.Join(dataDir, "pki")
	leaves, _, err := scanLeaves(pkiDir, nodeCAs(pkiDir))
	if err != nil {
		return nil, err
	}
	var out []RenewedCertificate
	var errs []error
	for _, l := range leaves {
		if !l.staleIssuer {
			continue
		}
		renewed, err := renewLeaves(dataDir, []leafFile{l}, []renewal{{name: l.name, reason: "signed by the CA being retired"}}, pki.Lifetime(l.cert), now)
		out = append(out, renewed...)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// refreshKubeconfigCAs puts bundle in place of the CA data of every cluster entry of the
// kubeconfigs in dataDir (*.kubeconfig) that trusts a CA of bundle, so their clients trust the
// CAs of a rotation as the node's own components do.
func refreshKubeconfigCAs(dataDir string, bundle []byte) error {
	trusted, err := pki.ParseCertificates(bundle)
	if err != nil {
		return err
	}
	paths, err := filepath.Glob(filepath.Join(dataDir, "*.kubeconfig"))
	if err != nil {
		return err
	}
	var errs []error
	for _, path := range paths {
		kc, err := clientcmd.LoadFromFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("kubeconfig %s: %w", path, err))
			continue
		}
		changed := false
		for _, cluster := range kc.Clusters {
			if string(cluster.CertificateAuthorityData) == string(bundle) || !sharesACert(cluster.CertificateAuthorityData, trusted) {
				continue
			}
			cluster.CertificateAuthorityData = bundle
			changed = true
		}
		if !changed {
			continue
		}
		data, err := clientcmd.Write(*kc)
		if err == nil {
			err = pki.WriteFileAtomic(path, data, 0o600)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("kubeconfig %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// sharesACert reports whether the PEM certificates of data include one of certs.
func sharesACert(data []byte, certs []*x509.Certificate) bool {
	have, err := pki.ParseCertificates(data)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(have, func(c *x509.Certificate) bool { return slices.ContainsFunc(certs, c.Equal) })
}

func encodeCerts(certs []*x509.Certificate) []byte {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}
