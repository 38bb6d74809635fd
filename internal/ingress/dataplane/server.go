package dataplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// Options configure a Server; zero values take the defaults of Default.
type Options struct {
	// Address is the host the listeners bind ("" for every address).
	Address string
	// ListenAddress, when set, gives the address a port of the table is served on instead of
	// Address:port (tests serve port 80 of a table on 127.0.0.1:0).
	ListenAddress func(port int32) string
	Logger        *slog.Logger
	Metrics       *Metrics
	Clock         clock.PassiveClock
	// ReadHeaderTimeout bounds reading a request's headers; IdleTimeout a kept-alive
	// connection's wait for its next request; ShutdownGrace how long a dropped port's server
	// waits for its requests in flight.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	ShutdownGrace     time.Duration
	// MaxHeaderBytes bounds a request's header block (431 beyond it).
	MaxHeaderBytes int
	// DialTimeout bounds connecting to an endpoint before the next one is tried.
	DialTimeout time.Duration
	// Transport reaches the endpoints; an http.Transport with DialTimeout when nil.
	Transport http.RoundTripper
}

// Default fills unset options.
func (o *Options) Default() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 120 * time.Second
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = 30 * time.Second
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.ListenAddress == nil {
		addr := o.Address
		o.ListenAddress = func(port int32) string { return net.JoinHostPort(addr, strconv.Itoa(int(port))) }
	}
	if o.Transport == nil {
		o.Transport = &http.Transport{
			Proxy:                 nil, // straight to the pods, never through an environment proxy
			DialContext:           (&net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
}

// Server serves route tables. Set hands it a table (and opens or closes listeners to match);
// Run owns the servers' lifetimes.
type Server struct {
	opts  Options
	table atomic.Pointer[table]
	proxy *httputil.ReverseProxy

	mu      sync.Mutex
	ports   map[int32]*portServer
	stopped bool
	wg      sync.WaitGroup
}

type portServer struct {
	protocol routes.Protocol
	srv      *http.Server
	addr     net.Addr
}

// New returns a Server serving an empty table.
func New(opts Options) *Server {
	opts.Default()
	s := &Server{opts: opts, ports: map[int32]*portServer{}}
	empty, _ := compile(&routes.Table{})
	s.table.Store(empty)
	s.proxy = s.newReverseProxy()
	return s
}

// Set swaps in t, opens a listener for each new port and shuts down (gracefully) those of ports
// t no longer has. Requests already routed finish on the table they started with. A port that
// cannot be bound is reported in the error and retried at the next Set; the others serve. So is
// a route that cannot serve (a regular expression that does not compile): it matches nothing.
func (s *Server) Set(t routes.Table) error {
	c, errs := compile(&t)
	s.table.Store(c)
	s.opts.Metrics.tableSwaps.Inc()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("data plane stopped")
	}
	current := map[int32]routes.Protocol{}
	for p, ps := range s.ports {
		current[p] = ps.protocol
	}
	open, shut := planListeners(current, &t)
	for _, p := range shut {
		s.shutdown(s.ports[p])
		delete(s.ports, p)
	}
	for _, l := range open {
		ps, err := s.listen(l.Port, l.Protocol)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.ports[l.Port] = ps
	}
	return errors.Join(errs...)
}

// Addr is the address port of the table is served on, for tests that listen on port 0.
func (s *Server) Addr(port int32) (net.Addr, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, ok := s.ports[port]
	if !ok {
		return nil, false
	}
	return ps.addr, true
}

// Run waits until ctx ends, then shuts every listener down (requests in flight get
// ShutdownGrace) and waits for every goroutine the server started.
func (s *Server) Run(ctx context.Context) error {
	<-ctx.Done()
	s.mu.Lock()
	s.stopped = true
	for p, ps := range s.ports {
		s.shutdown(ps)
		delete(s.ports, p)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// planListeners decides which listeners to open and which ports to shut, from the ports served
// now (with their protocols) and the desired table: a port whose protocol changed is shut and
// opened again.
func planListeners(current map[int32]routes.Protocol, t *routes.Table) (open []routes.Listener, shut []int32) {
	want := map[int32]bool{}
	for _, l := range t.Listeners {
		want[l.Port] = true
		proto, ok := current[l.Port]
		if ok && proto == l.Protocol {
			continue
		}
		if ok {
			shut = append(shut, l.Port)
		}
		open = append(open, l)
	}
	for p := range current {
		if !want[p] {
			shut = append(shut, p)
		}
	}
	return open, shut
}

func (s *Server) listen(port int32, proto routes.Protocol) (*portServer, error) {
	addr := s.opts.ListenAddress(port)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s for port %d: %w", addr, port, err)
	}
	srv := &http.Server{
		Handler:           s.handler(port, proto),
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug),
		Protocols:         new(http.Protocols),
	}
	srv.Protocols.SetHTTP1(true)
	if proto == routes.ProtocolHTTPS {
		srv.Protocols.SetHTTP2(true)
		srv.TLSConfig = &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) { return s.certificate(port, hello) },
		}
	} else {
		// h2c with prior knowledge, for gRPC and other HTTP/2 clients without TLS.
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	ps := &portServer{protocol: proto, srv: srv, addr: ln.Addr()}
	s.opts.Logger.Info("ingress listener open", "port", port, "protocol", proto, "address", ln.Addr().String())
	s.wg.Go(func() {
		var err error
		if proto == routes.ProtocolHTTPS {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Logger.Error("ingress listener failed", "port", port, "err", err)
		}
	})
	return ps, nil
}

// shutdown closes a port's listener at once and lets its requests in flight finish within
// ShutdownGrace; the caller holds s.mu.
func (s *Server) shutdown(ps *portServer) {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownGrace)
		defer cancel()
		if err := ps.srv.Shutdown(ctx); err != nil {
			_ = ps.srv.Close()
		}
	})
}

func (s *Server) certificate(port int32, hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	l := s.table.Load().listeners[port]
	if l == nil {
		return nil, fmt.Errorf("no listener on port %d", port)
	}
	c := routes.SelectCertificate(l.spec.Certificates, routes.NormalizeHost(hello.ServerName))
	if c == nil || c.Cert == nil {
		return nil, fmt.Errorf("no certificate for %q on port %d", hello.ServerName, port)
	}
	return c.Cert, nil
}

// randomPick is the weighted backend choice of the server.
func randomPick(n int64) int64 { return rand.Int64N(n) }
