package pki

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Backdate is how long before its issue a leaf of lifetime is valid: an hour (peers' clocks
// differ by less), but at most a tenth of the lifetime, so a short-lived leaf (the test flag
// --leaf-certificate-lifetime) spends most of its validity ahead of it.
func Backdate(lifetime time.Duration) time.Duration { return min(time.Hour, lifetime/10) }

// RenewAt is when skiff renews a leaf it issued: once two thirds of its validity have passed, so
// a renewal that fails has a third of the lifetime to be retried before anything expires (a
// 365-day leaf is renewed with about 122 days left).
func RenewAt(cert *x509.Certificate) time.Time {
	return cert.NotBefore.Add(cert.NotAfter.Sub(cert.NotBefore) * 2 / 3)
}

// Lifetime is how long cert was issued for, without its backdating: the inverse of IssueFor's
// validity period, so a certificate issued for d reports d.
func Lifetime(cert *x509.Certificate) time.Duration {
	total := cert.NotAfter.Sub(cert.NotBefore)
	// total = d + min(1h, d/10): d is total/1.1 while the backdate is under an hour.
	if d := total * 10 / 11; d < 10*time.Hour {
		return d
	}
	return total - time.Hour
}

// LeafOf is the description of the leaf cert is, to issue it again: its subject, names,
// addresses, usages and the algorithm of its key.
func LeafOf(cert *x509.Certificate) Leaf {
	leaf := Leaf{
		CommonName:   cert.Subject.CommonName,
		Organization: slices.Clone(cert.Subject.Organization),
		DNSNames:     slices.Clone(cert.DNSNames),
		IPs:          slices.Clone(cert.IPAddresses),
		Server:       slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth),
		Client:       slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth),
	}
	switch cert.PublicKey.(type) {
	case *rsa.PublicKey:
		leaf.Key = RSA2048
	case *ecdsa.PublicKey:
		leaf.Key = ECDSAP256
	}
	return leaf
}

// Signs reports whether ca signed cert (and cert is no CA itself): the leaves a node may renew
// with the CA keys it holds.
func (ca *CA) Signs(cert *x509.Certificate) bool {
	return !cert.IsCA && cert.CheckSignatureFrom(ca.Cert) == nil
}

// Trusts reports whether a certificate of ca's bundle signed cert (and cert is no CA): the leaves
// of a node that its CA bundle still accepts, Signs' leaves and those of a CA being retired.
func (ca *CA) Trusts(cert *x509.Certificate) bool {
	return !cert.IsCA && slices.ContainsFunc(ca.Bundle, func(c *x509.Certificate) bool { return cert.CheckSignatureFrom(c) == nil })
}

// Renew issues cert again with a new key, for lifetime (DefaultLeafLifetime when 0), and
// replaces dir/<name>.{crt,key} under the pair's lock (the one EnsureLeaf takes), key first: a
// reader that loads the pair between the two renames finds a key that does not match the old
// certificate and keeps what it had (KeyPairHolder), or retries. It returns the new certificate.
func (ca *CA) Renew(dir, name string, cert *x509.Certificate, lifetime time.Duration, now time.Time) (*x509.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	unlock, err := lockFile(filepath.Join(dir, "."+name+".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	certPEM, keyPEM, err := ca.IssueFor(LeafOf(cert), now, lifetime)
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(certPath, certPEM, 0o600); err != nil {
		return nil, err
	}
	out, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, fmt.Errorf("renewed %s: %w", certPath, err)
	}
	return out, nil
}

// LoadCA reads dir/<name>.crt and its key, which must both exist (a node renews leaves only with
// a CA it holds; a joined node holds none).
func LoadCA(dir, name string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
	if err != nil {
		return nil, err
	}
	return parseCA(certPEM, keyPEM)
}
