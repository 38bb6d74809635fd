package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// CA is a certificate authority whose key lives on disk beside its certificate.
type CA struct {
	// Cert is the signer: the certificate of the key.
	Cert *x509.Certificate
	// CertPEM is the CA file as it is, the whole bundle during a rotation: what the CA's clients
	// must trust.
	CertPEM []byte
	// Bundle is every certificate of CertPEM, Cert among them.
	Bundle []*x509.Certificate
	key    crypto.Signer
	// files, for a CA loaded from disk, are its certificate and key files: what it signs with
	// follows them (signing), so a long-lived signer (the controller manager's) signs with the new
	// CA once a rotation makes it the signer, without a restart. Cert, CertPEM and Bundle stay as
	// loaded.
	files *caFiles
}

// caFiles is a CA's files and the signer last loaded from them.
type caFiles struct {
	cert, key string
	// mu serialises reloads; readers never take it.
	mu  sync.Mutex
	cur atomic.Pointer[heldSigner]
}

type heldSigner struct {
	cert   *x509.Certificate
	key    crypto.Signer
	stamps []FileStamp
}

// signing is the certificate and key ca signs with: the files' current pair for a CA loaded from
// disk (the last pair that loaded when the files are caught mid-change), else the pair it holds.
func (ca *CA) signing() (*x509.Certificate, crypto.Signer) {
	f := ca.files
	if f == nil {
		return ca.Cert, ca.key
	}
	stamps := []FileStamp{StampOf(f.cert), StampOf(f.key)}
	held := f.cur.Load()
	if StampsEqual(held.stamps, stamps) {
		return held.cert, held.key
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if held = f.cur.Load(); StampsEqual(held.stamps, stamps) {
		return held.cert, held.key
	}
	certPEM, certErr := os.ReadFile(f.cert)
	keyPEM, keyErr := os.ReadFile(f.key)
	if certErr != nil || keyErr != nil {
		return held.cert, held.key
	}
	next, err := parseCA(certPEM, keyPEM)
	if err != nil {
		return held.cert, held.key
	}
	f.cur.Store(&heldSigner{cert: next.Cert, key: next.key, stamps: stamps})
	return next.Cert, next.key
}

// following makes ca sign with what certPath and keyPath hold from now on (signing); ca was
// loaded from them, with stamps taken before reading.
func (ca *CA) following(certPath, keyPath string, stamps []FileStamp) *CA {
	ca.files = &caFiles{cert: certPath, key: keyPath}
	ca.files.cur.Store(&heldSigner{cert: ca.Cert, key: ca.key, stamps: stamps})
	return ca
}

// Validity periods: the CA outlives every leaf it signs.
const (
	caValidity = 10 * 365 * 24 * time.Hour
	// DefaultLeafLifetime is how long a leaf certificate skiff issues itself is valid.
	DefaultLeafLifetime = 365 * 24 * time.Hour
)

// LoadOrCreateCA reads dir/<name>.crt and dir/<name>.key, creating a new self-signed CA there when
// neither exists. A half-present pair is an error rather than silently replaced: replacing a CA would
// invalidate every certificate and kubeconfig already handed out.
func LoadOrCreateCA(dir, name, commonName string, now time.Time) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	stamps := []FileStamp{StampOf(certPath), StampOf(keyPath)}
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case certErr == nil && keyErr == nil:
		ca, err := parseCA(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("CA %s or %s is damaged: %w; restore both from a backup (a new CA would invalidate every certificate and kubeconfig of the cluster)", certPath, keyPath, err)
		}
		return ca.following(certPath, keyPath, stamps), nil
	case errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist):
	default:
		return nil, fmt.Errorf("CA %s: certificate and key must both exist or both be absent (cert: %v, key: %v)", name, certErr, keyErr)
	}
	certPEM, keyPEM, err := GenerateCA(commonName, now)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(map[string][]byte{certPath: certPEM, keyPath: keyPEM}); err != nil {
		return nil, err
	}
	stamps = []FileStamp{StampOf(certPath), StampOf(keyPath)}
	ca, err := parseCA(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return ca.following(certPath, keyPath, stamps), nil
}

// GenerateCA makes a new self-signed CA valid for ten years from now and returns its PEM
// certificate and key, written nowhere: a new cluster's CA, or the next one of a CA rotation.
func GenerateCA(commonName string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-sign CA: %w", err)
	}
	keyPEM, err = EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// parseCA pairs keyPEM with its certificate in certPEM, which may be a bundle of several CAs (a
// CA rotation trusts the old CA and the new one): the signer is the certificate whose public key
// is the key's, wherever it stands in the bundle, so which CA signs is decided by the key file
// alone. The other certificates stay trusted (Bundle) without signing.
func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return nil, errors.New("the CA key's public half cannot be compared")
	}
	i := slices.IndexFunc(certs, func(c *x509.Certificate) bool { return pub.Equal(c.PublicKey) })
	if i < 0 {
		return nil, fmt.Errorf("none of the %d certificates in the CA bundle belongs to the CA key", len(certs))
	}
	return &CA{Cert: certs[i], CertPEM: certPEM, Bundle: certs, key: key}, nil
}

// Leaf describes a certificate to issue.
type Leaf struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	Server       bool
	Client       bool
	// Key is the leaf's key algorithm (ECDSA P-256 when zero).
	Key KeyAlgorithm
}

// KeyAlgorithm is the kind of key pair a certificate is issued for.
type KeyAlgorithm int

const (
	// ECDSAP256 is the default: small keys, fast handshakes, and what every modern client offers.
	ECDSAP256 KeyAlgorithm = iota
	// RSA2048 is kubeadm's default, served beside ECDSA for clients that offer only RSA cipher
	// suites (busybox wget's built-in TLS in older images, small embedded stacks). Generating one
	// takes around 100 ms, so skiff does it once per certificate, never per start.
	RSA2048
)

func (a KeyAlgorithm) String() string {
	if a == RSA2048 {
		return "RSA 2048"
	}
	return "ECDSA P-256"
}

// GenerateKey makes a new private key of the algorithm.
func (a KeyAlgorithm) GenerateKey() (crypto.Signer, error) {
	if a == RSA2048 {
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// keeps reports whether a certificate on disk for pub may stay for a leaf of the algorithm: an
// RSA leaf must hold an RSA key (it exists for the clients that take nothing else); the default
// leaf keeps whatever key it has, so a pair an operator put there is never replaced for its key.
func (a KeyAlgorithm) keeps(pub crypto.PublicKey) bool {
	if a != RSA2048 {
		return true
	}
	_, ok := pub.(*rsa.PublicKey)
	return ok
}

// Issue signs a new key pair for leaf and returns PEM certificate and key.
func (ca *CA) Issue(leaf Leaf, now time.Time) (certPEM, keyPEM []byte, err error) {
	return ca.IssueFor(leaf, now, 0)
}

// IssueFor is Issue with a lifetime (DefaultLeafLifetime when 0). The certificate is valid from
// Backdate(lifetime) before now, so a peer whose clock is a little behind accepts it at once.
func (ca *CA) IssueFor(leaf Leaf, now time.Time, lifetime time.Duration) (certPEM, keyPEM []byte, err error) {
	if lifetime <= 0 {
		lifetime = DefaultLeafLifetime
	}
	key, err := leaf.Key.GenerateKey()
	if err != nil {
		return nil, nil, fmt.Errorf("generate %s key for %s: %w", leaf.Key, leaf.CommonName, err)
	}
	var usages []x509.ExtKeyUsage
	if leaf.Server {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	if leaf.Client {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: leaf.CommonName, Organization: leaf.Organization},
		NotBefore:    now.Add(-Backdate(lifetime)),
		NotAfter:     now.Add(lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
		DNSNames:     leaf.DNSNames,
		IPAddresses:  leaf.IPs,
	}
	signerCert, signerKey := ca.signing()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate for %s: %w", leaf.CommonName, err)
	}
	keyPEM, err = EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// EnsureLeaf keeps dir/<name>.crt and .key valid for leaf: an existing pair is reused while it was
// signed by ca, covers every requested name and address, and has more than a month to live;
// otherwise (a renewal skiff schedules on purpose) a new pair replaces it, and an absent pair is
// issued. A damaged or half-present pair is an error naming the file and the fix, never silently
// replaced: whoever trusted the old certificate would stop working.
func (ca *CA) EnsureLeaf(dir, name string, leaf Leaf, now time.Time) (certPath, keyPath string, err error) {
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	// Several roles of one node ask for the same identity at start (the kubelet and the pod
	// network agent both run as system:node:<name>): without the lock one could read the new
	// certificate before its key is written, or two could each write half of a pair.
	unlock, err := lockFile(filepath.Join(dir, "."+name+".lock"))
	if err != nil {
		return "", "", err
	}
	defer unlock()
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	fix := fmt.Sprintf("restore it, or delete %s and %s to have skiff issue a new pair", certPath, keyPath)
	switch {
	case errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist):
	case certErr != nil:
		return "", "", fmt.Errorf("certificate %s: %w; %s", certPath, certErr, fix)
	case keyErr != nil:
		return "", "", fmt.Errorf("key %s: %w; %s", keyPath, keyErr, fix)
	default:
		cert, err := ParseCertificate(certPEM)
		if err != nil {
			return "", "", fmt.Errorf("certificate %s is damaged: %w; %s", certPath, err, fix)
		}
		if err := matchesKey(cert, keyPEM); err != nil {
			return "", "", fmt.Errorf("key %s is damaged or does not belong to %s: %w; %s", keyPath, certPath, err, fix)
		}
		if ca.covers(cert, leaf, now) {
			return certPath, keyPath, nil
		}
	}
	certPEM, keyPEM, err = ca.Issue(leaf, now)
	if err != nil {
		return "", "", err
	}
	return certPath, keyPath, writeFiles(map[string][]byte{certPath: certPEM, keyPath: keyPEM})
}

func (ca *CA) covers(cert *x509.Certificate, leaf Leaf, now time.Time) bool {
	if cert.CheckSignatureFrom(ca.Cert) != nil || now.Add(RenewWithin).After(cert.NotAfter) || !leaf.Key.keeps(cert.PublicKey) {
		return false
	}
	if cert.Subject.CommonName != leaf.CommonName || !slices.Equal(cert.Subject.Organization, leaf.Organization) {
		return false
	}
	for _, name := range leaf.DNSNames {
		if !slices.Contains(cert.DNSNames, name) {
			return false
		}
	}
	for _, ip := range leaf.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// ParseCertificate decodes the first PEM certificate.
func ParseCertificate(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate found")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return cert, nil
}

// ParseCertificates decodes every PEM certificate in data (a CA bundle may hold several, as
// during a rotation); no certificate at all is an error.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate %d: %w", len(out)+1, err)
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

// ParseKey decodes a PEM private key (PKCS#8, EC or PKCS#1).
func ParseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM key found")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("unsupported private key format")
}

// EncodeKey encodes a private key as PEM PKCS#8, which every reader (Go, OpenSSL, etcd) takes.
func EncodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func newSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on Linux; a fixed serial would still make a valid certificate.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// writeFiles writes each file atomically (temp file and rename) with owner-only permissions, so a
// crash never leaves a truncated key behind.
func writeFiles(files map[string][]byte) error {
	for path, data := range files {
		if err := WriteFileAtomic(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// WriteFileAtomic writes data to path through a temporary file in the same directory.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	if existing, err := os.ReadFile(path); err == nil && bytes.Equal(existing, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	return nil
}

// matchesKey checks that keyPEM parses and is the private half of cert's public key.
func matchesKey(cert *x509.Certificate, keyPEM []byte) error {
	key, err := ParseKey(keyPEM)
	if err != nil {
		return err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return errors.New("the key is not the certificate's")
	}
	return nil
}

// LoadKey reads the PEM private key at path, which must exist: the service-account signing key of
// an existing cluster, whose loss would invalidate every token issued.
func LoadKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("key %s is missing: restore it from a backup (every service-account token was signed with it); to start over, delete it together with the CA only when you mean to re-create the whole cluster's credentials", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read key %s: %w", path, err)
	}
	key, err := ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("key %s is damaged: %w; restore it from a backup", path, err)
	}
	return key, nil
}

// LoadOrCreateKey reads the PEM private key at path, creating an ECDSA P-256 key there when absent
// (the service-account signing key of a new cluster).
func LoadOrCreateKey(path string) (crypto.Signer, error) {
	if data, err := os.ReadFile(path); err == nil {
		return ParseKey(data)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read key %s: %w", path, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	pemBytes, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(path, pemBytes, 0o600); err != nil {
		return nil, err
	}
	return key, nil
}

// NewCA builds a CA from a PEM certificate and its PEM private key, for callers that hold the pair
// already (the controller manager's signer).
func NewCA(certPEM, keyPEM []byte) (*CA, error) { return parseCA(certPEM, keyPEM) }

// SignPublicKey issues a certificate for pub from tmpl: what the certificate says (subject,
// names, usages, validity) is the caller's decision, checked before it asks. The CA only fills
// the serial number, marks the leaf as no CA, and never lets it outlive the CA itself, as
// Kubernetes' signer caps a certificate at its signer's expiry.
func (ca *CA) SignPublicKey(tmpl *x509.Certificate, pub crypto.PublicKey) ([]byte, error) {
	leaf := *tmpl
	leaf.SerialNumber = newSerial()
	leaf.BasicConstraintsValid, leaf.IsCA = true, false
	signerCert, signerKey := ca.signing()
	if leaf.NotAfter.After(signerCert.NotAfter) {
		leaf.NotAfter = signerCert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, &leaf, signerCert, pub, signerKey)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %q: %w", leaf.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// lockFile takes an exclusive flock on path (created if absent) and returns its release. flock
// locks belong to the open file, so two goroutines of one process exclude each other as two
// processes do.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
