package dataplane

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

type targetKey struct{}

// target is what the handler decided for a request, carried to the reverse proxy's hooks.
type target struct {
	d        decision
	prefix   string
	attempts int // endpoints tried so far
}

// endpoint is the address of the n-th endpoint to try: the decided one, then the next ones in
// order when connecting fails.
func (t *target) endpoint(n int) string {
	eps := t.d.backend.spec.Endpoints
	return eps[(t.d.endpoint+n)%len(eps)].Address
}

func (s *Server) handler(port int32, proto routes.Protocol) http.Handler {
	scheme := "http"
	if proto == routes.ProtocolHTTPS {
		scheme = "https"
	}
	portLabel := strconv.Itoa(int(port))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.opts.Clock.Now()
		rec := &recorder{ResponseWriter: w}
		tbl := s.table.Load()
		var local string
		if tbl.addressed[port] {
			a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
			local = localIP(a)
		}
		l := tbl.lookup(local, port)
		d := decide(l, r, scheme, randomPick)
		t := &target{d: d}
		if d.status != 0 {
			if d.location != "" {
				rec.Header().Set("Location", d.location)
			}
			http.Error(rec, http.StatusText(d.status), d.status)
		} else {
			t.prefix = d.route.prefix
			ctx := context.WithValue(r.Context(), targetKey{}, t)
			if to := requestTimeout(d.route.spec.Timeouts); to > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, to)
				defer cancel()
			}
			s.mirror(r, d)
			s.proxy.ServeHTTP(rec, r.WithContext(ctx))
		}
		code := rec.code
		if code == 0 {
			code = http.StatusOK
			if r.Header.Get("Upgrade") != "" {
				code = http.StatusSwitchingProtocols // hijacked by the proxy, which wrote the 101 itself
			}
		}
		elapsed := s.opts.Clock.Since(start)
		s.opts.Metrics.requests.WithLabelValues(portLabel, strconv.Itoa(code)).Inc()
		s.opts.Metrics.duration.Observe(elapsed.Seconds())
		if s.opts.Logger.Enabled(r.Context(), slog.LevelDebug) {
			s.opts.Logger.Debug("ingress request", "port", port, "remote", r.RemoteAddr, "proto", r.Proto,
				"method", r.Method, "host", r.Host, "path", r.URL.Path, "code", code, "duration", elapsed,
				"route", routeName(d.route), "backend", backendName(d.backend), "endpoint", endpointOf(t), "reason", d.reason)
		}
	})
}

func requestTimeout(t routes.Timeouts) time.Duration {
	switch {
	case t.Request == 0:
		return t.BackendRequest
	case t.BackendRequest == 0 || t.Request < t.BackendRequest:
		return t.Request
	}
	return t.BackendRequest
}

func routeName(r *route) string {
	if r == nil {
		return ""
	}
	s := r.spec.Source
	return string(s.Kind) + " " + s.Namespace + "/" + s.Name
}

func backendName(b *backend) string {
	if b == nil {
		return ""
	}
	return b.spec.Name
}

func endpointOf(t *target) string {
	if t.d.backend == nil || len(t.d.backend.spec.Endpoints) == 0 || t.attempts == 0 {
		return ""
	}
	return t.endpoint(t.attempts - 1)
}

func (s *Server) newReverseProxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := pr.In.Context().Value(targetKey{}).(*target)
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = t.endpoint(0)
			pr.SetXForwarded()
			for _, fs := range [][]routes.Filter{t.d.route.spec.Filters, t.d.backend.spec.Filters} {
				applyRequestFilters(fs, pr, t.prefix)
			}
		},
		// Zero: ReverseProxy already flushes at once for event streams and for responses of
		// unknown length (streams), and buffers the rest.
		FlushInterval: 0,
		Transport:     &retryTransport{s: s},
		// Copy buffers are reused: without a pool each request allocates 32 KiB.
		BufferPool: &bufferPool{},
		ModifyResponse: func(res *http.Response) error {
			t := res.Request.Context().Value(targetKey{}).(*target)
			for _, fs := range [][]routes.Filter{t.d.route.spec.Filters, t.d.backend.spec.Filters} {
				for _, f := range fs {
					if f.Type == routes.FilterResponseHeaderModifier && f.ResponseHeaderModifier != nil {
						modifyHeaders(res.Header, f.ResponseHeaderModifier)
					}
				}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			code := http.StatusBadGateway
			if errors.Is(err, context.DeadlineExceeded) {
				code = http.StatusGatewayTimeout
			}
			if errors.Is(r.Context().Err(), context.Canceled) {
				return // the client went away; nobody reads an answer
			}
			s.opts.Logger.Debug("ingress upstream error", "host", r.Host, "path", r.URL.Path, "err", err)
			w.WriteHeader(code)
		},
		ErrorLog: slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug),
	}
}

func applyRequestFilters(fs []routes.Filter, pr *httputil.ProxyRequest, prefix string) {
	for _, f := range fs {
		switch {
		case f.Type == routes.FilterRequestHeaderModifier && f.RequestHeaderModifier != nil:
			modifyHeaders(pr.Out.Header, f.RequestHeaderModifier)
		case f.Type == routes.FilterURLRewrite && f.URLRewrite != nil:
			if f.URLRewrite.Hostname != nil {
				pr.Out.Host = *f.URLRewrite.Hostname
			}
			if f.URLRewrite.Path != nil {
				pr.Out.URL.Path = rewritePath(f.URLRewrite.Path, prefix, pr.In.URL.Path)
				pr.Out.URL.RawPath = ""
			}
		}
	}
}

// modifyHeaders sets, adds, then removes, as Gateway API's header modifier does.
func modifyHeaders(h http.Header, m *routes.HeaderModifier) {
	for _, kv := range m.Set {
		h.Set(kv.Name, kv.Value)
	}
	for _, kv := range m.Add {
		h.Add(kv.Name, kv.Value)
	}
	for _, n := range m.Remove {
		h.Del(n)
	}
}

// retryTransport sends a request to its target's endpoint and, when connecting fails (the pod
// is gone but the table not yet updated), to the next endpoints in turn; a request that reached
// an endpoint is never sent again.
type retryTransport struct{ s *Server }

func (rt *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t := req.Context().Value(targetKey{}).(*target)
	n := len(t.d.backend.spec.Endpoints)
	for {
		t.attempts++
		res, err := rt.s.opts.transportFor(t.d.backend.spec).RoundTrip(req)
		if err == nil {
			return res, nil
		}
		rt.s.opts.Metrics.upstreamErrors.WithLabelValues(errorKind(err)).Inc()
		replayable := req.Body == nil || req.Body == http.NoBody
		if !isDialError(err) || !replayable || t.attempts >= n || req.Context().Err() != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.URL.Host = t.endpoint(t.attempts)
	}
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func errorKind(err error) string {
	switch {
	case isDialError(err):
		return "dial"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "other"
}

// mirror sends a copy of r (without its body) to each mirror filter's backend, in the
// background, and discards the answer.
func (s *Server) mirror(r *http.Request, d decision) {
	for _, fs := range [][]routes.Filter{d.route.spec.Filters, d.backend.spec.Filters} {
		for _, f := range fs {
			if f.Type != routes.FilterRequestMirror || f.RequestMirror == nil {
				continue
			}
			m := f.RequestMirror
			eps := m.Backend.Endpoints
			if len(eps) == 0 || m.Backend.Invalid != "" || (m.Percent != nil && rand.Int32N(100) >= *m.Percent) {
				continue
			}
			out := r.Clone(context.WithoutCancel(r.Context()))
			out.Body, out.ContentLength, out.RequestURI = http.NoBody, 0, ""
			out.URL.Scheme, out.URL.Host = "http", eps[rand.IntN(len(eps))].Address
			out.Header.Del("Connection")
			s.wg.Go(func() {
				ctx, cancel := context.WithTimeout(out.Context(), s.opts.DialTimeout*2)
				defer cancel()
				res, err := s.opts.transportFor(&m.Backend).RoundTrip(out.WithContext(ctx))
				if err != nil {
					s.opts.Logger.Debug("ingress mirror failed", "backend", m.Backend.Name, "err", err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
			})
		}
	}
}

// bufferPool lends the reverse proxy its 32 KiB copy buffers.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// recorder remembers the status written; Unwrap lets http.ResponseController (the reverse
// proxy's flushes and upgrades) reach the connection's own writer.
type recorder struct {
	http.ResponseWriter
	code int
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 && code >= 200 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
