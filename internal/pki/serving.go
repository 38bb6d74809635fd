package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// RSASuffix names the RSA pair beside a serving pair: apiserver.crt has apiserver-rsa.crt.
const RSASuffix = "-rsa"

// KeyPairFiles are a certificate file and its key's.
type KeyPairFiles struct {
	CertFile, KeyFile string
}

// ServingAlgorithms are the keys every skiff TLS endpoint serves, in the order it prefers them:
// ECDSA for every client that offers it, RSA for the ones that offer only RSA cipher suites
// (which otherwise fail the handshake with alert 40, handshake_failure).
func ServingAlgorithms() []KeyAlgorithm { return []KeyAlgorithm{ECDSAP256, RSA2048} }

// ServingPairFiles are the files of name's serving pairs in dir, in ServingAlgorithms' order.
func ServingPairFiles(dir, name string) []KeyPairFiles {
	out := make([]KeyPairFiles, 0, 2)
	for _, a := range ServingAlgorithms() {
		base := filepath.Join(dir, name+a.fileSuffix())
		out = append(out, KeyPairFiles{CertFile: base + ".crt", KeyFile: base + ".key"})
	}
	return out
}

func (a KeyAlgorithm) fileSuffix() string {
	if a == RSA2048 {
		return RSASuffix
	}
	return ""
}

// EnsureServing keeps one serving certificate per key of ServingAlgorithms for leaf (whose Key it
// ignores): dir/<name>.{crt,key} with an ECDSA key and dir/<name>-rsa.{crt,key} with an RSA key,
// both signed by ca for the same names. Each pair follows EnsureLeaf's rules on its own: kept
// while it is good, renewed within RenewWithin of its expiry or when the names change, issued
// when absent. So a node installed before the RSA pair existed keeps its ECDSA pair and gets the
// RSA one on its next start; the RSA key is generated once, not per start.
//
// Both leaves are signed by the one cluster CA (ECDSA): a client that verifies the chain still
// needs ECDSA signatures, which every verifying TLS stack has had for a decade; what the RSA leaf
// fixes is the key exchange of clients that offer only RSA cipher suites, and busybox wget's
// built-in TLS, the common one, does not verify certificates at all.
func (ca *CA) EnsureServing(dir, name string, leaf Leaf, now time.Time) ([]KeyPairFiles, error) {
	out := make([]KeyPairFiles, 0, 2)
	for _, a := range ServingAlgorithms() {
		l := leaf
		l.Key = a
		cert, key, err := ca.EnsureLeaf(dir, name+a.fileSuffix(), l, now)
		if err != nil {
			return nil, fmt.Errorf("%s serving certificate: %w", a, err)
		}
		out = append(out, KeyPairFiles{CertFile: cert, KeyFile: key})
	}
	return out, nil
}

// LoadServing reads serving pairs for a tls.Config's Certificates, in the order given (Go's
// server takes the first one the ClientHello supports, so the preferred comes first), with Leaf
// parsed and the DER certificates of chain appended to each (a CA a client may want to see).
func LoadServing(pairs []KeyPairFiles, chain ...[]byte) ([]tls.Certificate, error) {
	if len(pairs) == 0 {
		return nil, errors.New("no serving certificate")
	}
	out := make([]tls.Certificate, 0, len(pairs))
	for _, p := range pairs {
		c, err := tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load serving certificate %s: %w", p.CertFile, err)
		}
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parse serving certificate %s: %w", p.CertFile, err)
		}
		c.Certificate = append(c.Certificate, chain...)
		out = append(out, c)
	}
	return out, nil
}

// PickServing is tls.Config.GetCertificate's choice among certs, for servers whose certificates
// change while they run: the first one the client supports (as Go picks among
// tls.Config.Certificates), else the first, whose handshake then fails with the client's own
// reason.
func PickServing(hello *tls.ClientHelloInfo, certs []tls.Certificate) (*tls.Certificate, error) {
	if len(certs) == 0 {
		return nil, errors.New("no serving certificate")
	}
	for i := range certs {
		if hello.SupportsCertificate(&certs[i]) == nil {
			return &certs[i], nil
		}
	}
	return &certs[0], nil
}
