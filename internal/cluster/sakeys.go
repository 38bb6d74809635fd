package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// Service-account keys on disk, in <data-dir>/pki: sa.key signs (kube-apiserver's
// --service-account-signing-key-file) and verifies; every sa-retired-<kid>.pub verifies only
// (the rest of --service-account-key-file), so the tokens a rotated-out key signed stay valid
// until an operator prunes it.
const (
	saKeyFile       = "sa.key"
	saRetiredPrefix = "sa-retired-"
	saRetiredSuffix = ".pub"
)

// loadSAKeys reads the service-account key set of the pki directory dir.
func loadSAKeys(dir string) (*serviceaccount.KeySet, error) {
	signing, err := pki.LoadKey(filepath.Join(dir, saKeyFile))
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	names, err := retiredSAKeyFiles(dir)
	if err != nil {
		return nil, err
	}
	retired := make([]crypto.PublicKey, 0, len(names))
	for _, name := range names {
		pub, err := readPublicKey(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		retired = append(retired, pub)
	}
	return serviceaccount.NewKeySet(signing, retired...)
}

// retiredSAKeyFiles are the names of the retired public keys in dir, sorted.
func retiredSAKeyFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list service account keys: %w", err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasPrefix(n, saRetiredPrefix) && strings.HasSuffix(n, saRetiredSuffix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

func readPublicKey(path string) (crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read retired service account key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("retired service account key %s: no PEM PUBLIC KEY", path)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("retired service account key %s: %w", path, err)
	}
	return pub, nil
}

func encodePublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode service account public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// saKeyHolder is the service-account key set as it is on disk: a running API server signs with a
// key rotated by `skiff certificate rotate-sa-key` (another process) from the next token on, and
// its JWKS and verifier take the new and retired keys, without a restart. As pki.KeyPairHolder,
// each use compares the identity of sa.key and of the directory (a retired key written or pruned
// renames a file in or out of it, which changes the directory) and reloads only on a change; a
// reload that fails keeps the set it had.
type saKeyHolder struct {
	dir    string
	logger *slog.Logger
	mu     sync.Mutex
	cur    atomic.Pointer[heldSAKeys]
}

type heldSAKeys struct {
	set    *serviceaccount.KeySet
	stamps []pki.FileStamp
}

var _ serviceaccount.KeySource = (*saKeyHolder)(nil)

// newSAKeyHolder loads the keys of the pki directory dir, which must load now.
func newSAKeyHolder(dir string, logger *slog.Logger) (*saKeyHolder, error) {
	h := &saKeyHolder{dir: dir, logger: logger}
	stamps := h.stamps()
	set, err := loadSAKeys(dir)
	if err != nil {
		return nil, err
	}
	h.cur.Store(&heldSAKeys{set: set, stamps: stamps})
	return h, nil
}

// KeySet is the set as it is now on disk (or the last one that loaded).
func (h *saKeyHolder) KeySet() *serviceaccount.KeySet {
	held := h.cur.Load()
	if pki.StampsEqual(held.stamps, h.stamps()) {
		return held.set
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	held = h.cur.Load()
	stamps := h.stamps()
	if pki.StampsEqual(held.stamps, stamps) {
		return held.set
	}
	set, err := loadSAKeys(h.dir)
	if err != nil {
		h.logger.Warn("reload service account keys; keeping the loaded ones", "dir", h.dir, "err", err)
		return held.set
	}
	h.cur.Store(&heldSAKeys{set: set, stamps: stamps})
	if held.set.SigningKeyID() != set.SigningKeyID() || !slices.Equal(held.set.KeyIDs(), set.KeyIDs()) {
		h.logger.Info("service account keys reloaded", "signingKid", set.SigningKeyID(), "verifyingKids", set.KeyIDs())
	}
	return set
}

// stamps names the versions of the pki directory (a key added or removed) and of sa.key.
func (h *saKeyHolder) stamps() []pki.FileStamp {
	return []pki.FileStamp{pki.StampOf(h.dir), pki.StampOf(filepath.Join(h.dir, saKeyFile))}
}

// SAKeyRotation is what RotateSAKey did.
type SAKeyRotation struct {
	// OldKeyID is the retired key's kid, NewKeyID the new signing key's.
	OldKeyID, NewKeyID string
	// Verifying are the kids that verify tokens after the rotation, the new one first.
	Verifying []string
	// Pruned are the retired kids removed (PruneRetiredSAKeys).
	Pruned []string
}

// RotateSAKey makes a new service-account signing key for the control plane whose data dir is
// dataDir, keeping the old public key as a retired, still verifying key. The retired key is
// written before sa.key is replaced (both atomically), so a running API server reading between
// the two sees the old signing key with its retired copy: every token verifies at every moment.
func RotateSAKey(dataDir string) (SAKeyRotation, error) {
	dir := filepath.Join(dataDir, "pki")
	old, err := loadSAKeys(dir)
	if err != nil {
		return SAKeyRotation{}, fmt.Errorf("%w (run this on a control plane, with its --data-dir)", err)
	}
	oldPub := old.PublicKeys()[0]
	oldPEM, err := encodePublicKey(oldPub)
	if err != nil {
		return SAKeyRotation{}, err
	}
	newKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return SAKeyRotation{}, fmt.Errorf("generate service account key: %w", err)
	}
	newPEM, err := pki.EncodeKey(newKey)
	if err != nil {
		return SAKeyRotation{}, err
	}
	if err := pki.WriteFileAtomic(filepath.Join(dir, retiredSAKeyName(old.SigningKeyID())), oldPEM, 0o600); err != nil {
		return SAKeyRotation{}, err
	}
	if err := pki.WriteFileAtomic(filepath.Join(dir, saKeyFile), newPEM, 0o600); err != nil {
		return SAKeyRotation{}, err
	}
	now, err := loadSAKeys(dir)
	if err != nil {
		return SAKeyRotation{}, err
	}
	return SAKeyRotation{OldKeyID: old.SigningKeyID(), NewKeyID: now.SigningKeyID(), Verifying: now.KeyIDs()}, nil
}

// PruneRetiredSAKeys removes every retired service-account key of dataDir: the tokens they signed
// stop verifying. Run it once the longest-lived token signed before the last rotation has expired.
func PruneRetiredSAKeys(dataDir string) (SAKeyRotation, error) {
	dir := filepath.Join(dataDir, "pki")
	set, err := loadSAKeys(dir)
	if err != nil {
		return SAKeyRotation{}, err
	}
	names, err := retiredSAKeyFiles(dir)
	if err != nil {
		return SAKeyRotation{}, err
	}
	var pruned []string
	for _, name := range names {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return SAKeyRotation{Pruned: pruned}, fmt.Errorf("prune retired service account key: %w", err)
		}
		pruned = append(pruned, strings.TrimSuffix(strings.TrimPrefix(name, saRetiredPrefix), saRetiredSuffix))
	}
	return SAKeyRotation{NewKeyID: set.SigningKeyID(), Verifying: []string{set.SigningKeyID()}, Pruned: pruned}, nil
}

// retiredSAKeyName is the file of the retired key kid (a kid is base64url: a safe file name).
func retiredSAKeyName(kid string) string { return saRetiredPrefix + kid + saRetiredSuffix }
