package lb

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// Config configures a Balancer.
type Config struct {
	// ListenAddress is host:port the balancer accepts clients on (a loopback address).
	ListenAddress string
	// Seeds are the API servers (host:port) to use before any are learned.
	Seeds []string
	// ProbeTLS verifies the API servers' certificates and carries the client certificate the
	// probes (GET /readyz) authenticate with.
	ProbeTLS *tls.Config
	// DialTimeout bounds one connection attempt to a backend before the next is tried (default
	// 500ms: the API servers are on this host's network, and a failover must take under a second).
	DialTimeout time.Duration
	// ProbeInterval is the time between probes of one backend (default 1s); ProbeTimeout bounds one
	// probe (default 1s).
	ProbeInterval, ProbeTimeout time.Duration
	// Clock drives the probe schedule; nil is the real clock.
	Clock clock.WithTicker
	// Registerer takes the balancer's metrics; nil registers none.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Learned, when set, is told every new API server list WatchEndpoints learns (a joined node
	// keeps it on disk, so a restart does not depend on its --server alone).
	Learned func(addrs []string)
}

func (c *Config) defaults() {
	if c.DialTimeout <= 0 {
		c.DialTimeout = 500 * time.Millisecond
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = time.Second
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Balancer is the running load balancer: it carries out State's plans.
type Balancer struct {
	cfg     Config
	ln      net.Listener
	metrics *metrics
	client  *http.Client

	mu    sync.Mutex
	state *State
	order []string
	conns map[string]map[net.Conn]struct{}
	// kick wakes the control loop when an event needs a new plan at once.
	kick chan struct{}
}

// New listens on cfg.ListenAddress; Run serves.
func New(cfg Config) (*Balancer, error) {
	cfg.defaults()
	if len(cfg.Seeds) == 0 {
		return nil, errors.New("load balancer: no seed API server")
	}
	ln, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("load balancer: listen on %s: %w", cfg.ListenAddress, err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		ln.Close()
		return nil, err
	}
	st := NewState(StateConfig{Seeds: cfg.Seeds, ProbeInterval: cfg.ProbeInterval})
	tr := &http.Transport{TLSClientConfig: cfg.ProbeTLS, DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: cfg.DialTimeout}).DialContext}
	return &Balancer{
		cfg: cfg, ln: ln, metrics: m, state: st, order: st.Order(),
		client: &http.Client{Transport: tr, Timeout: cfg.ProbeTimeout},
		conns:  map[string]map[net.Conn]struct{}{},
		kick:   make(chan struct{}, 1),
	}, nil
}

// Addr is the address clients connect to.
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

// SetEndpoints hands the balancer the API servers the "kubernetes" endpoints list.
func (b *Balancer) SetEndpoints(addrs []string) {
	b.step(Event{Type: EventEndpoints, Addrs: addrs})
}

// Backends is the current view of the backends.
func (b *Balancer) Backends() []Backend {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state.Backends()
}

func (b *Balancer) step(ev Event) {
	b.mu.Lock()
	ev.Now = b.cfg.Clock.Now()
	b.state.Step(ev)
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Run serves until ctx ends, then closes the listener and every proxied connection.
func (b *Balancer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.control(ctx)
	}()
	go func() {
		<-ctx.Done()
		b.ln.Close()
	}()
	var err error
	for {
		c, aerr := b.ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("load balancer: accept: %w", aerr)
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.proxy(ctx, c)
		}()
	}
	cancel()
	b.closeAll()
	wg.Wait()
	return err
}

// control runs State: it asks for a plan on every tick and every event, and carries it out.
func (b *Balancer) control(ctx context.Context) {
	tick := b.cfg.Clock.NewTicker(b.cfg.ProbeInterval / 4)
	defer tick.Stop()
	for {
		b.mu.Lock()
		rd := b.state.Ready(b.cfg.Clock.Now())
		b.order = rd.Order
		backends := b.state.Backends()
		b.mu.Unlock()
		b.metrics.observe(backends)
		for _, addr := range rd.Close {
			n := b.closeBackend(addr)
			if n > 0 {
				b.cfg.Logger.Warn("closed connections to an API server that went bad", "backend", addr, "connections", n)
			}
		}
		for _, addr := range rd.Probe {
			go b.probe(ctx, addr)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		case <-b.kick:
		}
	}
}

func (b *Balancer) probe(ctx context.Context, addr string) {
	ok := false
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/readyz", nil)
	if err == nil {
		resp, derr := b.client.Do(req)
		err = derr
		if derr == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			ok = resp.StatusCode == http.StatusOK
			if !ok {
				err = fmt.Errorf("/readyz answered %s", resp.Status)
			}
		}
	}
	if ctx.Err() != nil {
		return
	}
	b.mu.Lock()
	before := b.state.Health(addr)
	b.mu.Unlock()
	var netErr net.Error
	timedOut := !ok && errors.As(err, &netErr) && netErr.Timeout()
	b.step(Event{Type: EventProbe, Addr: addr, OK: ok, TimedOut: timedOut})
	b.mu.Lock()
	after := b.state.Health(addr)
	b.mu.Unlock()
	if before != after {
		b.cfg.Logger.Info("API server health changed", "backend", addr, "health", after.String(), "err", err)
	}
}

// proxy connects a client to the first backend in the current order that accepts, then copies
// bytes both ways until either side closes.
func (b *Balancer) proxy(ctx context.Context, client net.Conn) {
	defer client.Close()
	b.mu.Lock()
	order := slices.Clone(b.order)
	b.mu.Unlock()
	var upstream net.Conn
	var addr string
	dialer := net.Dialer{Timeout: b.cfg.DialTimeout}
	for _, a := range order {
		c, err := dialer.DialContext(ctx, "tcp", a)
		if err == nil {
			upstream, addr = c, a
			break
		}
		b.metrics.dialFailures.WithLabelValues(a).Inc()
		b.cfg.Logger.Debug("API server refused a connection; trying the next", "backend", a, "err", err)
		b.step(Event{Type: EventDialFailed, Addr: a})
	}
	if upstream == nil {
		b.cfg.Logger.Warn("no API server accepted a connection", "backends", order)
		return
	}
	if !b.track(addr, upstream) {
		upstream.Close()
		return
	}
	defer b.untrack(addr, upstream)
	b.metrics.connections.WithLabelValues(addr).Inc()
	defer b.metrics.connections.WithLabelValues(addr).Dec()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, client); closeWrite(upstream); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, upstream); closeWrite(client); done <- struct{}{} }()
	// Either direction ending (or the backend being closed under it) ends the pair.
	<-done
	upstream.Close()
	client.Close()
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// track records an upstream connection so that closeBackend can cut it; false means the balancer
// is stopping.
func (b *Balancer) track(addr string, c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns == nil {
		return false
	}
	if b.conns[addr] == nil {
		b.conns[addr] = map[net.Conn]struct{}{}
	}
	b.conns[addr][c] = struct{}{}
	return true
}

func (b *Balancer) untrack(addr string, c net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conns[addr], c)
}

// closeBackend closes every open connection to addr and says how many there were.
func (b *Balancer) closeBackend(addr string) int {
	b.mu.Lock()
	conns := b.conns[addr]
	delete(b.conns, addr)
	b.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	return len(conns)
}

func (b *Balancer) closeAll() {
	b.mu.Lock()
	all := b.conns
	b.conns = nil
	b.mu.Unlock()
	for _, conns := range all {
		for c := range conns {
			c.Close()
		}
	}
}
