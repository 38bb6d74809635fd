package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/utils/clock"
)

// PoolHolder holds a trust pool as it is on disk: the certificates of one or more CA bundle files
// (each may hold several PEM certificates, as ca.crt does while a CA rotation trusts the old CA
// and the new one). It is KeyPairHolder's counterpart for trust: a CA added to a bundle is
// trusted, and one removed is refused, within RecheckInterval, without a restart. A use stats the
// files at most once per RecheckInterval and reloads them only when one changed; a reload that
// fails (a file caught missing or without a certificate) keeps the pool it had and is tried again
// at the next look, so a half-done edit never leaves a server trusting nothing.
//
// Go's tls.Config takes a fixed pool, so the holder hands it over per handshake: a server's
// ClientCAs through GetConfigForClient (ServerTLS) and a client's roots through VerifyConnection
// (ClientTLS). Connections already open keep the trust of their handshake.
type PoolHolder struct {
	files   []string
	recheck recheck
	// mu serialises reloads; readers never take it.
	mu  sync.Mutex
	cur atomic.Pointer[heldPool]
}

type heldPool struct {
	pool   *x509.CertPool
	certs  []*x509.Certificate
	stamps []FileStamp
}

// NewPoolHolder loads the bundles of files, which must load now.
func NewPoolHolder(files ...string) (*PoolHolder, error) {
	if len(files) == 0 {
		return nil, errors.New("trust pool: no CA bundle file")
	}
	h := &PoolHolder{files: files}
	stamps := h.stamps()
	held, err := h.load(stamps)
	if err != nil {
		return nil, err
	}
	h.cur.Store(held)
	h.recheck.due()
	return h, nil
}

// WithClock makes the holder pace its looks at its files by c, for tests; set it before the
// holder is shared. It returns h.
func (h *PoolHolder) WithClock(c clock.PassiveClock) *PoolHolder {
	h.recheck.use(c)
	return h
}

func (h *PoolHolder) load(stamps []FileStamp) (*heldPool, error) {
	held := &heldPool{pool: x509.NewCertPool(), stamps: stamps}
	for _, f := range h.files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read CA bundle: %w", err)
		}
		certs, err := ParseCertificates(data)
		if err != nil {
			return nil, fmt.Errorf("CA bundle %s: %w", f, err)
		}
		for _, c := range certs {
			held.pool.AddCert(c)
		}
		held.certs = append(held.certs, certs...)
	}
	return held, nil
}

func (h *PoolHolder) current() *heldPool {
	held := h.cur.Load()
	if !h.recheck.due() || StampsEqual(held.stamps, h.stamps()) {
		return held
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	held = h.cur.Load()
	stamps := h.stamps()
	if StampsEqual(held.stamps, stamps) {
		return held
	}
	next, err := h.load(stamps)
	if err != nil {
		return held
	}
	h.cur.Store(next)
	return next
}

// Pool is the trust pool as it is on disk, as of at most RecheckInterval ago (or the last one
// that loaded). Callers must not add to it: it is shared by every handshake.
func (h *PoolHolder) Pool() *x509.CertPool { return h.current().pool }

// Certificates are the CA certificates of the pool, in the order of the files.
func (h *PoolHolder) Certificates() []*x509.Certificate { return h.current().certs }

// ServerTLS makes cfg verify client certificates against the holder's pool as it is at each
// handshake. A GetConfigForClient already in cfg (ServeStaticRSA's) is kept: the config it
// returns gets the current pool too. Set it after KeyPairHolder.ServerTLS. It returns cfg.
func (h *PoolHolder) ServerTLS(cfg *tls.Config) *tls.Config {
	inner := cfg.GetConfigForClient
	base := cfg.Clone()
	base.GetConfigForClient = nil
	cfg.ClientCAs = h.Pool()
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		var out *tls.Config
		if inner != nil {
			picked, err := inner(hello)
			if err != nil {
				return nil, err
			}
			if picked != nil {
				out = picked.Clone()
			}
		}
		if out == nil {
			out = base.Clone()
		}
		out.ClientCAs = h.Pool()
		return out, nil
	}
	return cfg
}

// ClientTLS makes cfg verify servers against the holder's pool as it is at each handshake: Go's
// own verification (which knows only the fixed RootCAs) is turned off and VerifyConnection does
// the same checks, the chain to a root of the pool and the server's name, on every handshake,
// resumed ones included. The name is cfg.ServerName, which must be set: VerifyConnection cannot
// see the name http.Transport fills in per dial, and the SNI it can see is empty for an IP
// address, so without a fixed name the check would pass any certificate of the pool. It returns
// cfg.
func (h *PoolHolder) ClientTLS(cfg *tls.Config) (*tls.Config, error) {
	if cfg.ServerName == "" {
		return nil, fmt.Errorf("%s: a client that trusts it needs a fixed server name", h)
	}
	name := cfg.ServerName
	cfg.RootCAs = nil
	cfg.InsecureSkipVerify = true //nolint:gosec // VerifyConnection verifies against the current pool.
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return h.verifyServer(cs, name) }
	return cfg, nil
}

// ClientTLSForHosts is ClientTLS for a client of many servers, each dialed by its own name (the
// API server's client of the kubelets): the name checked is the one the connection sent (SNI).
// A server dialed by IP address sends none, and Go hands VerifyConnection no other, so then the
// chain to the pool is checked and unnamed decides whether the certificate is one such a server
// may hold (a kubelet's: a node's identity). It returns cfg.
func (h *PoolHolder) ClientTLSForHosts(cfg *tls.Config, unnamed func(*x509.Certificate) error) *tls.Config {
	cfg.RootCAs = nil
	cfg.InsecureSkipVerify = true //nolint:gosec // VerifyConnection verifies against the current pool.
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if err := h.verifyServer(cs, cs.ServerName); err != nil {
			return err
		}
		if cs.ServerName == "" {
			return unnamed(cs.PeerCertificates[0])
		}
		return nil
	}
	return cfg
}

func (h *PoolHolder) verifyServer(cs tls.ConnectionState, name string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: server presented no certificate")
	}
	intermediates := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: h.Pool(), Intermediates: intermediates, DNSName: name,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tls: verify server certificate against %s: %w", h, err)
	}
	return nil
}

func (h *PoolHolder) stamps() []FileStamp {
	out := make([]FileStamp, 0, len(h.files))
	for _, f := range h.files {
		out = append(out, StampOf(f))
	}
	return out
}

// String names the holder's files, for logs and errors.
func (h *PoolHolder) String() string { return "CA bundle " + strings.Join(h.files, ", ") }
