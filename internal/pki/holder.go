package pki

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// KeyPairHolder holds the key pairs of a TLS endpoint or client as they are on disk, so a
// certificate renewed while the process runs (by the node's renewal loop or by `skiff
// certificate rotate` in another process) is used from the next handshake on, without a restart.
// A use looks at the files' identity (a stat per file) at most once per RecheckInterval and
// reloads them only when one changed; the pairs are swapped atomically, so a handshake sees either
// the old pairs or the new ones, never a mix. A reload that fails (a pair caught half-written: the
// certificate renewed but not yet its key) keeps the pairs it had, which are still valid (renewal
// happens at two thirds of a lifetime), and is tried again at the next look.
//
// Connections already open keep the certificate of their handshake: TLS checks it once.
type KeyPairHolder struct {
	pairs []KeyPairFiles
	chain [][]byte
	// chainFile, when set, is a CA bundle whose certificates follow each pair instead of chain,
	// read again whenever it changes (a CA rotation's bundle).
	chainFile string
	recheck   recheck
	// mu serialises reloads; readers never take it.
	mu  sync.Mutex
	cur atomic.Pointer[heldPairs]
}

// RecheckInterval is how long a holder serves what it read before it looks at its files again. A
// look is a stat of each file, a syscall each; every request of a component's in-process client
// and every authenticated request used to pay them (3 % of the API server's CPU under load), and
// now one request in hundreds does. A file rewritten on disk (a renewal, a CA rotation's bundle)
// is picked up within this interval.
const RecheckInterval = 100 * time.Millisecond

// recheck paces a holder's looks at its files: at most one per RecheckInterval, taken by one
// caller while the others go on with what the holder has.
type recheck struct {
	clock clock.PassiveClock
	// next is the time (Unix nanoseconds, of clock) before which the files are not looked at.
	next atomic.Int64
}

// due reports whether the caller should look at the files now, and if so claims the look.
func (r *recheck) due() bool {
	now := r.now().UnixNano()
	next := r.next.Load()
	return now >= next && r.next.CompareAndSwap(next, now+int64(RecheckInterval))
}

func (r *recheck) now() time.Time {
	if r.clock == nil {
		return time.Now()
	}
	return r.clock.Now()
}

// WithClock makes the holder pace its looks at its files by c, for tests; set it before the
// holder is shared. It returns h.
func (h *KeyPairHolder) WithClock(c clock.PassiveClock) *KeyPairHolder {
	h.recheck.use(c)
	return h
}

// use paces the looks by c from now on, the next one due at once.
func (r *recheck) use(c clock.PassiveClock) {
	r.clock = c
	r.next.Store(0)
}

type heldPairs struct {
	certs  []tls.Certificate
	stamps []FileStamp
}

// FileStamp is what tells one version of a file from the next: files are replaced by rename
// (WriteFileAtomic), which gives a new inode, and an editor's in-place write changes the size or
// the modification time.
type FileStamp struct {
	ino     uint64
	size    int64
	modTime time.Time
}

// NewKeyPairHolder loads pairs (in the order given; a server prefers the first a client supports)
// and appends the DER certificates of chain to each, as LoadServing does. The files must load now.
func NewKeyPairHolder(pairs []KeyPairFiles, chain ...[]byte) (*KeyPairHolder, error) {
	return (&KeyPairHolder{pairs: pairs, chain: chain}).start()
}

// NewKeyPairHolderWithBundle is NewKeyPairHolder whose chain is every certificate of the CA bundle
// file, as it is on disk at each use: a server that sends its CAs (the API server, so that a
// joining node finds the CA its token pins) sends the new one from the handshake after a CA
// rotation adds it.
func NewKeyPairHolderWithBundle(pairs []KeyPairFiles, bundleFile string) (*KeyPairHolder, error) {
	return (&KeyPairHolder{pairs: pairs, chainFile: bundleFile}).start()
}

// start loads the holder's files, which must load now.
func (h *KeyPairHolder) start() (*KeyPairHolder, error) {
	stamps := h.stamps()
	certs, err := h.load()
	if err != nil {
		return nil, err
	}
	h.cur.Store(&heldPairs{certs: certs, stamps: stamps})
	h.recheck.due()
	return h, nil
}

func (h *KeyPairHolder) load() ([]tls.Certificate, error) {
	chain := h.chain
	if h.chainFile != "" {
		data, err := os.ReadFile(h.chainFile)
		if err != nil {
			return nil, fmt.Errorf("read CA bundle: %w", err)
		}
		certs, err := ParseCertificates(data)
		if err != nil {
			return nil, fmt.Errorf("CA bundle %s: %w", h.chainFile, err)
		}
		chain = nil
		for _, c := range certs {
			chain = append(chain, c.Raw)
		}
	}
	return LoadServing(h.pairs, chain...)
}

// Certificates are the pairs as they are on disk, as of at most RecheckInterval ago (or the last
// ones that loaded).
func (h *KeyPairHolder) Certificates() []tls.Certificate {
	held := h.cur.Load()
	if !h.recheck.due() || StampsEqual(held.stamps, h.stamps()) {
		return held.certs
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	held = h.cur.Load()
	stamps := h.stamps()
	if StampsEqual(held.stamps, stamps) {
		return held.certs
	}
	certs, err := h.load()
	if err != nil {
		return held.certs
	}
	h.cur.Store(&heldPairs{certs: certs, stamps: stamps})
	return certs
}

// GetCertificate is tls.Config.GetCertificate: the first current pair the client supports.
func (h *KeyPairHolder) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	return PickServing(hello, h.Certificates())
}

// GetClientCertificate is tls.Config.GetClientCertificate: the first current pair.
func (h *KeyPairHolder) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	certs := h.Certificates()
	return &certs[0], nil
}

// RSA is the current RSA pair, for pki.ServeStaticRSA; nil when the holder has none.
func (h *KeyPairHolder) RSA() *tls.Certificate { return RSACertificate(h.Certificates()) }

// ServerTLS makes cfg serve the holder's pairs: GetCertificate instead of fixed Certificates, and
// the RSA pair for the clients that need the static RSA key exchange (ServeStaticRSA). It returns
// cfg.
func (h *KeyPairHolder) ServerTLS(cfg *tls.Config) *tls.Config {
	cfg.Certificates, cfg.GetCertificate = nil, h.GetCertificate
	return ServeStaticRSA(cfg, h.RSA)
}

// stamps reads the identity of every file of the holder; a file that cannot be read has the zero
// stamp, so its return is a change too.
func (h *KeyPairHolder) stamps() []FileStamp {
	out := make([]FileStamp, 0, 2*len(h.pairs))
	for _, p := range h.pairs {
		out = append(out, StampOf(p.CertFile), StampOf(p.KeyFile))
	}
	if h.chainFile != "" {
		out = append(out, StampOf(h.chainFile))
	}
	return out
}

// StampOf stats path; a file that cannot be read has the zero stamp.
func StampOf(path string) FileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return FileStamp{}
	}
	s := FileStamp{size: fi.Size(), modTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s
}

// StampsEqual reports whether two lists of stamps name the same versions of the same files.
func StampsEqual(a, b []FileStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ino != b[i].ino || a[i].size != b[i].size || !a[i].modTime.Equal(b[i].modTime) {
			return false
		}
	}
	return true
}

// String names the holder's first certificate file, for logs and errors.
func (h *KeyPairHolder) String() string {
	if len(h.pairs) == 0 {
		return "no key pair"
	}
	return fmt.Sprintf("key pair %s", h.pairs[0].CertFile)
}
