package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
)

// Member is a running embedded etcd member.
type Member struct {
	cfg Config
	// mu guards etcd and its in-process gRPC server, which a Restart replaces.
	mu        sync.Mutex
	etcd      *embed.Etcd
	inProcess *inProcessServer
	ready     chan struct{}
	// failed is closed (with err set) when the member stops on its own or never becomes ready.
	failed   chan struct{}
	err      error
	stopOnce sync.Once
	stopped  chan struct{}
	// restarts carries Restart's requests to supervise, which owns the member's lifecycle.
	restarts chan chan error
	// stopping is set while the member is being stopped (for good or for a restart), so the
	// logger treats etcd's complaints about its own closing listeners as the expected part of it.
	stopping *atomic.Bool
}

// Start launches an embedded etcd member. It returns once the member's listeners are open; Ready
// is closed when the member has joined its cluster and serves requests. Cancelling ctx stops the
// member, as does Stop.
func Start(ctx context.Context, cfg Config) (*Member, error) {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	stopping := &atomic.Bool{}
	ecfg, err := embedConfig(cfg, stopping)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create etcd data dir %s: %w", cfg.DataDir, err)
	}
	e, err := embed.StartEtcd(ecfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd member %s in %s: %w", cfg.Name, cfg.DataDir, err)
	}
	m := &Member{
		stopping:  stopping,
		cfg:       cfg,
		etcd:      e,
		inProcess: serveInProcess(e),
		ready:     make(chan struct{}),
		failed:    make(chan struct{}),
		stopped:   make(chan struct{}),
		restarts:  make(chan chan error),
	}
	go m.supervise(ctx)
	return m, nil
}

// supervise turns etcd's notifications into Ready/Err, carries out restarts and stops the member
// when ctx ends.
func (m *Member) supervise(ctx context.Context) {
	if !m.awaitReady(ctx) {
		return
	}
	for {
		e := m.current()
		select {
		case err := <-e.Err():
			if err != nil {
				m.fail(fmt.Errorf("etcd member %s failed: %w", m.cfg.Name, err))
			}
			m.Stop()
			return
		case <-e.Server.StopNotify():
			m.failStop(fmt.Errorf("etcd member %s stopped", m.cfg.Name))
			return
		case <-ctx.Done():
			m.Stop()
			return
		case <-m.stopped:
			return
		case done := <-m.restarts:
			err := m.restart()
			done <- err
			if err != nil {
				m.failStop(err)
				return
			}
		}
	}
}

// awaitReady waits for the first start to serve, hurrying a one-member cluster's election, and
// closes Ready. It reports false when the member failed or was stopped meanwhile.
func (m *Member) awaitReady(ctx context.Context) bool {
	timeout := time.NewTimer(m.cfg.ReadyTimeout)
	defer timeout.Stop()
	e := m.current()
	hurry := newElectionHurry(e.Server)
	defer hurry.Stop()
	for {
		select {
		case <-hurry.C():
			hurry.Tick()
		case <-e.Server.ReadyNotify():
			close(m.ready)
			return true
		case <-timeout.C:
			m.failStop(fmt.Errorf("etcd member %s not ready after %s", m.cfg.Name, m.cfg.ReadyTimeout))
			return false
		case err := <-e.Err():
			m.failStop(fmt.Errorf("etcd member %s failed while starting: %w", m.cfg.Name, err))
			return false
		case <-ctx.Done():
			m.Stop()
			return false
		case <-m.stopped:
			return false
		}
	}
}

// current is the running embedded etcd.
func (m *Member) current() *embed.Etcd {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.etcd
}

// Restart stops the member's etcd and starts it again on the same data dir, so it reads its TLS
// files anew: etcd reads the CAs it trusts once, when it starts (its key pairs it reads at each
// handshake). Closing a leader hands its leadership to a peer first. Restart returns once the
// member serves again; a member that does not come back has failed (Failed, Err).
func (m *Member) Restart(ctx context.Context) error {
	done := make(chan error, 1)
	select {
	case m.restarts <- done:
	case <-m.stopped:
		return fmt.Errorf("etcd member %s: stopped", m.cfg.Name)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// restart is Restart's work, in supervise. A Stop meanwhile closes what restart started.
func (m *Member) restart() error {
	ecfg, err := embedConfig(m.cfg, m.stopping)
	if err != nil {
		return err
	}
	m.mu.Lock()
	old, oldInProcess := m.etcd, m.inProcess
	m.etcd, m.inProcess = nil, nil
	m.mu.Unlock()
	if old == nil {
		return nil // stopped
	}
	m.stopping.Store(true)
	closeEtcd(old, oldInProcess)
	e, err := embed.StartEtcd(ecfg)
	if err != nil {
		return fmt.Errorf("restart etcd member %s in %s: %w", m.cfg.Name, m.cfg.DataDir, err)
	}
	m.mu.Lock()
	select {
	case <-m.stopped:
		m.mu.Unlock()
		e.Close()
		return nil
	default:
		m.etcd, m.inProcess = e, serveInProcess(e)
		m.stopping.Store(false)
	}
	m.mu.Unlock()
	timeout := time.NewTimer(m.cfg.ReadyTimeout)
	defer timeout.Stop()
	hurry := newElectionHurry(e.Server)
	defer hurry.Stop()
	for {
		select {
		case <-hurry.C():
			hurry.Tick()
		case <-e.Server.ReadyNotify():
			return nil
		case err := <-e.Err():
			return fmt.Errorf("etcd member %s failed while restarting: %w", m.cfg.Name, err)
		case <-timeout.C:
			return fmt.Errorf("etcd member %s not ready %s after a restart", m.cfg.Name, m.cfg.ReadyTimeout)
		case <-m.stopped:
			return nil
		}
	}
}

// failStop fails the member with err and stops it.
func (m *Member) failStop(err error) {
	m.fail(err)
	m.Stop()
}

func (m *Member) fail(err error) {
	select {
	case <-m.failed:
	default:
		m.err = err
		close(m.failed)
	}
}

// Ready is closed once the member serves requests.
func (m *Member) Ready() <-chan struct{} { return m.ready }

// QuotaBackendBytes is the size the member's database may grow to before etcd raises NOSPACE.
func (m *Member) QuotaBackendBytes() int64 { return m.cfg.QuotaBackendBytes }

// Failed is closed when the member stopped on its own (or never got ready); Err then says why.
func (m *Member) Failed() <-chan struct{} { return m.failed }

// Err is the reason the member failed, once Failed is closed.
func (m *Member) Err() error {
	select {
	case <-m.failed:
		return m.err
	default:
		return nil
	}
}

// ClientURLs are the URLs clients reach this member on.
func (m *Member) ClientURLs() []string {
	return append([]string(nil), m.cfg.AdvertiseClientURLs...)
}

// Client returns a new client connected to this member; the caller closes it.
func (m *Member) Client() (*clientv3.Client, error) {
	var tlsConfig *tls.Config
	if m.cfg.ClientTLS.Enabled() {
		info := transport.TLSInfo{
			CertFile:      m.cfg.ClientTLS.CertFile,
			KeyFile:       m.cfg.ClientTLS.KeyFile,
			TrustedCAFile: m.cfg.ClientTLS.TrustedCAFile,
		}
		var err error
		if tlsConfig, err = info.ClientConfig(); err != nil {
			return nil, fmt.Errorf("etcd client TLS for member %s: %w", m.cfg.Name, err)
		}
	}
	return NewClient(m.ClientURLs(), tlsConfig, m.cfg.Logger)
}

// Stop shuts the member down and waits for it; safe to call more than once.
func (m *Member) Stop() {
	m.stopOnce.Do(func() {
		m.stopping.Store(true)
		close(m.stopped)
		m.mu.Lock()
		e, inProcess := m.etcd, m.inProcess
		m.etcd, m.inProcess = nil, nil
		m.mu.Unlock()
		if e != nil { // nil: a restart in progress, which closes what it starts
			closeEtcd(e, inProcess)
		}
	})
}

// closeEtcd stops an embedded etcd and its in-process server, the server first: etcd's close
// waits for its own gRPC servers, not for this one's streams.
func closeEtcd(e *embed.Etcd, inProcess *inProcessServer) {
	if inProcess != nil {
		inProcess.stop()
	}
	e.Close()
}

func embedConfig(cfg Config, stopping *atomic.Bool) (*embed.Config, error) {
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.DataDir
	var err error
	if ec.ListenClientUrls, err = parseURLs(cfg.ListenClientURLs); err != nil {
		return nil, err
	}
	if ec.AdvertiseClientUrls, err = parseURLs(cfg.AdvertiseClientURLs); err != nil {
		return nil, err
	}
	// The client URLs serve gRPC alone (Config.ListenClientHTTPURLs says why).
	if len(cfg.ListenClientHTTPURLs) > 0 {
		if ec.ListenClientHttpUrls, err = parseURLs(cfg.ListenClientHTTPURLs); err != nil {
			return nil, err
		}
	} else {
		ec.ListenClientHttpUrls = httpOnlyURLs(ec.ListenClientUrls)
	}
	if ec.ListenPeerUrls, err = parseURLs(cfg.ListenPeerURLs); err != nil {
		return nil, err
	}
	if ec.AdvertisePeerUrls, err = parseURLs(cfg.AdvertisePeerURLs); err != nil {
		return nil, err
	}
	ec.InitialCluster = cfg.InitialCluster
	ec.InitialClusterToken = cfg.InitialClusterToken
	ec.ClusterState = cfg.ClusterState
	ec.ClientTLSInfo = tlsInfo(cfg.ClientTLS)
	ec.PeerTLSInfo = tlsInfo(cfg.PeerTLS)
	ec.WatchProgressNotifyInterval = cfg.WatchProgressNotifyInterval
	ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	// The raft log is held in memory from one snapshot to the next, plus the entries kept for a
	// slow follower: with etcd's defaults (10,000 and 5,000) a burst of 100 KB writes pinned over a
	// gigabyte long after it ended. A snapshot in etcd 3.6+ no longer copies the key space, so
	// taking one every 500 entries is cheap; a follower more than 100 entries behind gets the
	// database instead of the entries. At most 600 entries stay in memory.
	ec.SnapshotCount = snapshotCount
	ec.SnapshotCatchUpEntries = snapshotCatchUpEntries
	// Compaction is driven by the API servers (storage.Compactor), as in Kubernetes.
	ec.AutoCompactionRetention = "0"
	// The embedded member runs inside skiff; its metrics and pprof are not served separately.
	ec.Metrics = "basic"

	lg, err := newLogger(cfg.LogLevel, cfg.Logger, stopping)
	if err != nil {
		return nil, err
	}
	ec.Logger = "zap"
	ec.LogLevel = cfg.LogLevel
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg.Named("etcd"))
	return ec, nil
}

func tlsInfo(t TLSFiles) transport.TLSInfo {
	return transport.TLSInfo{
		CertFile:       t.CertFile,
		KeyFile:        t.KeyFile,
		TrustedCAFile:  t.TrustedCAFile,
		ClientCertAuth: t.ClientCertAuth,
	}
}

func newLogger(level string, log *slog.Logger, stopping *atomic.Bool) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("etcd log level %q: %w", level, err)
	}
	if log != nil {
		return zap.New(&slogCore{log: log.With("component", "etcd"), minLevel: lvl, stopping: stopping}), nil
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.Sampling = nil
	zc.OutputPaths = []string{"stderr"}
	zc.ErrorOutputPaths = []string{"stderr"}
	lg, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("build etcd logger: %w", err)
	}
	return lg, nil
}

// DefaultDialTimeout bounds how long a new client waits for its first connection.
const DefaultDialTimeout = 5 * time.Second

// NewClient connects to etcd at endpoints (an external cluster from --etcd-servers, or an embedded
// member); tlsConfig may be nil for plain HTTP. log, when set, receives the client's logs (as
// component=etcd); nil leaves them to etcd's JSON on stderr. The caller closes the client.
// dialOptions go to gRPC after the client's own (a later transport credential replaces its).
func NewClient(endpoints []string, tlsConfig *tls.Config, log *slog.Logger, dialOptions ...grpc.DialOption) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("etcd client: no endpoints")
	}
	// The client logs every retried request at warn, including expected answers such as
	// "future revision": only errors are worth printing.
	lg, err := newLogger("error", log, nil)
	if err != nil {
		return nil, err
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          DefaultDialTimeout,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		TLS:                  tlsConfig,
		Logger:               lg.Named("etcd-client"),
		// Large lists (many pods) exceed gRPC's 4 MiB default.
		MaxCallRecvMsgSize: math.MaxInt32,
		DialOptions:        dialOptions,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return c, nil
}

// ClientTLSConfig is the TLS configuration of an etcd client that trusts caFile and presents
// certFile/keyFile (etcd's client-cert-auth). All three may be empty for plain HTTP (nil config).
func ClientTLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("etcd client TLS: a certificate and its key go together")
	}
	info := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: caFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS (ca %s, cert %s): %w", caFile, certFile, err)
	}
	return cfg, nil
}

// snapshotCount and snapshotCatchUpEntries bound the raft log an embedded member keeps in memory
// (see embedConfig).
const (
	snapshotCount          = 500
	snapshotCatchUpEntries = 100
)

// httpOnlyURLs is one loopback URL, with the scheme of the client URLs, on a port the system picks.
func httpOnlyURLs(client []url.URL) []url.URL {
	scheme := "https"
	if len(client) > 0 && client[0].Scheme == "http" {
		scheme = "http"
	}
	return []url.URL{{Scheme: scheme, Host: "127.0.0.1:0"}}
}
