package pki

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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

// NeedsStaticRSA reports whether a ClientHello can complete a handshake with a Go server only over
// the static RSA key exchange (an RSA certificate, and no signature). That is a client without
// TLS 1.3 that sends no signature_algorithms extension: RFC 9155 made it mandatory in TLS 1.2 and
// Go 1.25 stopped assuming SHA-1 for its absence, so every ECDHE handshake with it fails with
// alert 40, handshake_failure, whatever the certificate. busybox wget's built-in TLS is one (1.35
// offers ECDHE suites, ECDSA ones included, but no signature_algorithms). A client that offers no
// ECDHE suite at all needs the static RSA key exchange too.
func NeedsStaticRSA(hello *tls.ClientHelloInfo) bool {
	if slices.Contains(hello.SupportedVersions, tls.VersionTLS13) {
		return false
	}
	return len(hello.SignatureSchemes) == 0 || !slices.ContainsFunc(hello.CipherSuites, isECDHE)
}

func isECDHE(id uint16) bool { return strings.Contains(tls.CipherSuiteName(id), "_ECDHE_") }

// StaticRSASuites are the cipher suites served to a client that NeedsStaticRSA, AEAD first. Go
// leaves them out of its defaults (no forward secrecy), so only such clients, which could not
// connect at all otherwise, get them; CBC with SHA-256 is for busybox versions without GCM.
func StaticRSASuites() []uint16 {
	return []uint16{
		tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_RSA_WITH_AES_128_CBC_SHA256, tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	}
}

// ServeStaticRSA makes cfg answer a ClientHello that NeedsStaticRSA with a copy of itself that
// offers only StaticRSASuites, TLS 1.2 and the RSA certificate rsaCert returns; every other
// ClientHello, and every one while rsaCert returns nil, gets cfg as it is. It returns cfg.
func ServeStaticRSA(cfg *tls.Config, rsaCert func() *tls.Certificate) *tls.Config {
	base := cfg.Clone()
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		cert := rsaCert()
		if cert == nil || !NeedsStaticRSA(hello) {
			return nil, nil
		}
		legacy := base.Clone()
		legacy.Certificates, legacy.GetCertificate = []tls.Certificate{*cert}, nil
		legacy.CipherSuites, legacy.MaxVersion = StaticRSASuites(), tls.VersionTLS12
		// HTTP/2 forbids these suites (RFC 7540, appendix A).
		legacy.NextProtos = slices.DeleteFunc(slices.Clone(base.NextProtos), func(p string) bool { return p == "h2" })
		return legacy, nil
	}
	return cfg
}

// RSACertificate is the first certificate of certs with an RSA key, nil when none has one.
func RSACertificate(certs []tls.Certificate) *tls.Certificate {
	for i := range certs {
		if _, ok := certs[i].PrivateKey.(*rsa.PrivateKey); ok {
			return &certs[i]
		}
	}
	return nil
}
