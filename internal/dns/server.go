package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"k8s.io/utils/clock"
)

// DefaultMaxUDPSize is the largest UDP answer sent (and the EDNS0 buffer size advertised): the
// DNS flag day 2020 value, which avoids IP fragmentation.
const DefaultMaxUDPSize = 1232

// Upstream forwards a question outside the cluster domain; cached says the answer came from the
// cache.
type Upstream interface {
	Forward(ctx context.Context, req *dns.Msg) (reply *dns.Msg, cached bool, err error)
}

// ServerConfig configures a Server.
type ServerConfig struct {
	Zone Zone
	View View
	// Upstream answers other names; nil refuses them (REFUSED).
	Upstream Upstream
	// MaxUDPSize caps UDP answers (default DefaultMaxUDPSize).
	MaxUDPSize uint16
	Clock      clock.PassiveClock
	Logger     *slog.Logger
	// Registerer receives the server's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Server answers DNS queries over UDP and TCP.
type Server struct {
	cfg     ServerConfig
	metrics *metrics
}

// NewServer builds a server.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.View == nil {
		return nil, errors.New("dns server: a view is required")
	}
	if cfg.MaxUDPSize < dns.MinMsgSize {
		cfg.MaxUDPSize = DefaultMaxUDPSize
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, metrics: m}, nil
}

// Answer builds the reply to req, not yet cut to a transport's size.
func (s *Server) Answer(ctx context.Context, req *dns.Msg) *dns.Msg {
	reply := new(dns.Msg)
	reply.SetReply(req)
	reply.RecursionAvailable = true
	reply.Compress = true
	if req.Opcode != dns.OpcodeQuery {
		reply.Question = nil
		reply.Rcode = dns.RcodeNotImplemented
		return reply
	}
	if len(req.Question) != 1 {
		reply.Question = nil
		reply.Rcode = dns.RcodeFormatError
		return reply
	}
	if opt := req.IsEdns0(); opt != nil {
		reply.SetEdns0(s.cfg.MaxUDPSize, opt.Do())
		if opt.Version() != 0 {
			reply.Rcode = dns.RcodeBadVers
			return reply
		}
	}
	q := req.Question[0]
	if q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY {
		reply.Rcode = dns.RcodeNotImplemented
		return reply
	}
	res := s.cfg.Zone.Resolve(s.cfg.View, q.Name, q.Qtype)
	if res.Forward {
		s.forward(ctx, req, reply)
		return reply
	}
	reply.Authoritative = true
	reply.Rcode = res.Rcode
	reply.Answer = res.Answer
	reply.Ns = res.Ns
	reply.Extra = append(res.Extra, reply.Extra...)
	for _, rr := range reply.Answer {
		// The question's own spelling (resolvers that randomize case compare it).
		if h := rr.Header(); strings.EqualFold(h.Name, q.Name) {
			h.Name = q.Name
		}
	}
	if res.Chase != "" && s.cfg.Upstream != nil {
		chase := new(dns.Msg)
		chase.SetQuestion(res.Chase, q.Qtype)
		if up, _, err := s.cfg.Upstream.Forward(ctx, chase); err == nil && up.Rcode == dns.RcodeSuccess {
			reply.Answer = append(reply.Answer, up.Answer...)
		} else if err != nil {
			s.cfg.Logger.Debug("resolve ExternalName target", "target", res.Chase, "err", err)
		}
	}
	return reply
}

// forward fills reply with the upstream's answer, or SERVFAIL.
func (s *Server) forward(ctx context.Context, req, reply *dns.Msg) {
	if s.cfg.Upstream == nil {
		reply.Rcode = dns.RcodeRefused
		return
	}
	up, cached, err := s.cfg.Upstream.Forward(ctx, req)
	if cached {
		s.metrics.cacheHits.Inc()
	} else {
		s.metrics.cacheMisses.Inc()
	}
	if err != nil {
		s.metrics.forwardErrors.Inc()
		s.cfg.Logger.Debug("forward", "name", req.Question[0].Name, "err", err)
		reply.Rcode = dns.RcodeServerFailure
		return
	}
	reply.Rcode = up.Rcode
	reply.Answer, reply.Ns = up.Answer, up.Ns
	for _, rr := range up.Extra {
		if rr.Header().Rrtype != dns.TypeOPT {
			reply.Extra = append(reply.Extra, rr)
		}
	}
}

// Fit cuts reply to what the transport carries: over UDP the client's EDNS0 buffer size (512
// without EDNS0) capped at MaxUDPSize, setting TC when records were dropped.
func (s *Server) Fit(req, reply *dns.Msg, udp bool) {
	size := dns.MaxMsgSize
	if udp {
		size = dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = int(min(max(opt.UDPSize(), dns.MinMsgSize), s.cfg.MaxUDPSize))
		}
	}
	reply.Truncate(size)
}

// ServeDNS implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	start := s.cfg.Clock.Now()
	udp := w.LocalAddr() != nil && w.LocalAddr().Network() == "udp"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reply := s.Answer(ctx, req)
	s.Fit(req, reply, udp)
	proto := "tcp"
	if udp {
		proto = "udp"
	}
	s.metrics.requests.WithLabelValues(proto, dns.RcodeToString[reply.Rcode]).Inc()
	s.metrics.duration.WithLabelValues(proto).Observe(s.cfg.Clock.Since(start).Seconds())
	if err := w.WriteMsg(reply); err != nil {
		s.cfg.Logger.Debug("write DNS reply", "client", w.RemoteAddr(), "err", err)
	}
}

// Listen binds UDP and TCP on one address; a port of 0 picks a free one for both.
func Listen(addr string) (net.PacketConn, net.Listener, error) {
	for attempt := 0; ; attempt++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("listen udp %s: %w", addr, err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, l, nil
		}
		_ = pc.Close()
		if _, port, _ := net.SplitHostPort(addr); port != "0" || attempt >= 10 {
			return nil, nil, fmt.Errorf("listen tcp %s: %w", addr, err)
		}
	}
}

// Serve answers on pc and l until ctx ends; it closes both.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn, l net.Listener) error {
	udp := &dns.Server{PacketConn: pc, Handler: s, UDPSize: int(s.cfg.MaxUDPSize)}
	tcp := &dns.Server{Listener: l, Handler: s, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	g, gctx := errgroup.WithContext(ctx)
	for _, srv := range []*dns.Server{udp, tcp} {
		g.Go(func() error {
			if err := srv.ActivateAndServe(); err != nil && gctx.Err() == nil {
				return fmt.Errorf("serve DNS: %w", err)
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, srv := range []*dns.Server{udp, tcp} {
			_ = srv.ShutdownContext(shut)
		}
		return nil
	})
	return g.Wait()
}

type metrics struct {
	requests                              *prometheus.CounterVec
	duration                              *prometheus.HistogramVec
	cacheHits, cacheMisses, forwardErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skiff_dns_requests_total",
			Help: "DNS requests answered, by transport and response code."}, []string{"proto", "rcode"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "skiff_dns_request_duration_seconds",
			Help: "Time to answer a DNS request.", Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10)}, []string{"proto"}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{Name: "skiff_dns_forward_cache_hits_total",
			Help: "Forwarded questions answered from the cache."}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{Name: "skiff_dns_forward_cache_misses_total",
			Help: "Forwarded questions sent upstream."}),
		forwardErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "skiff_dns_forward_errors_total",
			Help: "Forwarded questions no upstream answered."}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.cacheHits, m.cacheMisses, m.forwardErrors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register DNS metrics: %w", err)
		}
	}
	return m, nil
}
