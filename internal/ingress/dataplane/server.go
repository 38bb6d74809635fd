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
	"net/netip"
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
	// Address is the host the listeners bind ("" or an unspecified IP for every address).
	// Listeners of an address of their own (routes.Listener.Address) bind it, unless Address is
	// every address: then the port's one socket serves them all, each connection by the local
	// address it reached.
	Address string
	// ListenAddress, when set, gives the host:port a socket of the table is served on (tests
	// serve port 80 of a table on 127.0.0.1:0). Its key's Address is "" for the data plane's own.
	ListenAddress func(socket routes.ListenerKey) string
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
	// Transport reaches the endpoints of HTTP/1.1 backends, H2CTransport those of HTTP/2
	// cleartext ones (routes.BackendH2C); http.Transports with DialTimeout when nil.
	Transport    http.RoundTripper
	H2CTransport http.RoundTripper
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
		o.ListenAddress = func(k routes.ListenerKey) string {
			host := addr
			if k.Address != "" {
				host = k.Address
			}
			return net.JoinHostPort(host, strconv.Itoa(int(k.Port)))
		}
	}
	if o.Transport == nil {
		o.Transport = newTransport(o.DialTimeout, false)
	}
	if o.H2CTransport == nil {
		o.H2CTransport = newTransport(o.DialTimeout, true)
	}
}

// newTransport reaches pods: HTTP/1.1, or HTTP/2 with prior knowledge (h2c), which multiplexes
// requests over one connection per pod.
func newTransport(dialTimeout time.Duration, h2c bool) *http.Transport {
	t := &http.Transport{
		Proxy:                 nil, // straight to the pods, never through an environment proxy
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if h2c {
		t.Protocols = new(http.Protocols)
		t.Protocols.SetUnencryptedHTTP2(true)
	}
	return t
}

// transportFor is the transport that speaks b's protocol.
func (o *Options) transportFor(b *routes.Backend) http.RoundTripper {
	if b.Protocol == routes.BackendH2C {
		return o.H2CTransport
	}
	return o.Transport
}

// Server serves route tables. Set hands it a table (and opens or closes listeners to match);
// Run owns the servers' lifetimes.
type Server struct {
	opts  Options
	table atomic.Pointer[table]
	proxy *httputil.ReverseProxy

	mu sync.Mutex
	// sockets are the open listening sockets, by the address (socketOf) and port they bind.
	sockets map[routes.ListenerKey]*portServer
	// wildcard: Address binds every address, so one socket per port serves every listener.
	wildcard bool
	stopped  bool
	wg       sync.WaitGroup
}

type portServer struct {
	protocol routes.Protocol
	srv      *http.Server
	addr     net.Addr
}

// New returns a Server serving an empty table.
func New(opts Options) *Server {
	opts.Default()
	wildcard := opts.Address == ""
	if ip := net.ParseIP(opts.Address); ip != nil && ip.IsUnspecified() {
		wildcard = true
	}
	s := &Server{opts: opts, sockets: map[routes.ListenerKey]*portServer{}, wildcard: wildcard}
	empty, _ := compile(&routes.Table{})
	s.table.Store(empty)
	s.proxy = s.newReverseProxy()
	return s
}

// Set swaps in t, opens a socket for each new address and port and shuts down (gracefully)
// those t no longer has. Requests already routed finish on the table they started with. A socket
// that cannot be bound is reported in the error and retried at the next Set; the others serve.
// So is a route that cannot serve (a regular expression that does not compile): it matches
// nothing.
func (s *Server) Set(t routes.Table) error {
	c, errs := compile(&t)
	s.table.Store(c)
	s.opts.Metrics.tableSwaps.Inc()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("data plane stopped")
	}
	current := map[routes.ListenerKey]routes.Protocol{}
	for k, ps := range s.sockets {
		current[k] = ps.protocol
	}
	plan := planListeners(current, &t, s.wildcard)
	errs = append(errs, plan.conflicts...)
	for _, k := range plan.shut {
		s.shutdown(s.sockets[k])
		delete(s.sockets, k)
	}
	for _, o := range plan.open {
		ps, err := s.listen(o.socket, o.protocol)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.sockets[o.socket] = ps
	}
	return errors.Join(errs...)
}

// Addr is the address the listener k of the table is served on, for tests that listen on
// port 0.
func (s *Server) Addr(k routes.ListenerKey) (net.Addr, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, ok := s.sockets[socketOf(k, s.wildcard)]
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
	for k, ps := range s.sockets {
		s.shutdown(ps)
		delete(s.sockets, k)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// socketOf is the socket serving listener k: the port's one socket when the data plane binds
// every address (the connection's local address then picks the listener), else a socket of
// the listener's own address ("" standing for the data plane's).
func socketOf(k routes.ListenerKey, wildcard bool) routes.ListenerKey {
	if wildcard {
		return routes.ListenerKey{Port: k.Port}
	}
	return k
}

// socketPlan is what Set does to the sockets: open these, shut those, and the listeners that
// cannot be served because another listener of their socket speaks another protocol.
type socketPlan struct {
	open      []openSocket
	shut      []routes.ListenerKey
	conflicts []error
}

type openSocket struct {
	socket   routes.ListenerKey
	protocol routes.Protocol
}

// planListeners decides which sockets to open and which to shut, from the sockets open now
// (with their protocols) and the desired table: a socket whose protocol changed is shut and
// opened again. A socket's protocol is its data-plane listener's (Address ""), else its first
// listener's; a listener sharing the socket with another protocol is a conflict.
func planListeners(current map[routes.ListenerKey]routes.Protocol, t *routes.Table, wildcard bool) socketPlan {
	var plan socketPlan
	want := map[routes.ListenerKey]routes.Protocol{}
	var order []routes.ListenerKey
	for pass := range 2 {
		for i := range t.Listeners {
			l := &t.Listeners[i]
			if (pass == 0) != (l.Address == "") {
				continue // the data plane's own listeners first: they set the socket's protocol
			}
			sock := socketOf(l.Key(), wildcard)
			proto, ok := want[sock]
			switch {
			case !ok:
				want[sock] = l.Protocol
				order = append(order, sock)
			case proto != l.Protocol:
				plan.conflicts = append(plan.conflicts, fmt.Errorf("listener %s (%s, %s) is not served: its socket speaks %s", l.Name, keyString(l.Key()), l.Protocol, proto))
			}
		}
	}
	for _, sock := range order {
		proto, ok := current[sock]
		if ok && proto == want[sock] {
			continue
		}
		if ok {
			plan.shut = append(plan.shut, sock)
		}
		plan.open = append(plan.open, openSocket{socket: sock, protocol: want[sock]})
	}
	for sock := range current {
		if _, ok := want[sock]; !ok {
			plan.shut = append(plan.shut, sock)
		}
	}
	return plan
}

func (s *Server) listen(sock routes.ListenerKey, proto routes.Protocol) (*portServer, error) {
	port := sock.Port
	addr := s.opts.ListenAddress(sock)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s for %s: %w", addr, keyString(sock), err)
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
	var local string
	if hello.Conn != nil {
		local = localIP(hello.Conn.LocalAddr())
	}
	l := s.table.Load().lookup(local, port)
	if l == nil {
		return nil, fmt.Errorf("no listener on port %d", port)
	}
	c := routes.SelectCertificate(l.spec.Certificates, routes.NormalizeHost(hello.ServerName))
	if c == nil || c.Cert == nil {
		return nil, fmt.Errorf("no certificate for %q on port %d", hello.ServerName, port)
	}
	return c.Cert, nil
}

// localIP is the IP of a connection's local address, IPv4 unmapped ("" when it has none): the
// node's address the client reached.
func localIP(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return ""
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return ""
	}
	return ip.Unmap().String()
}

// randomPick is the weighted backend choice of the server.
func randomPick(n int64) int64 { return rand.Int64N(n) }
