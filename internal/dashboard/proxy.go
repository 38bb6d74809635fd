package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// proxiedPrefixes are the API paths `skiff dashboard` forwards to the API server.
var proxiedPrefixes = []string{"/api", "/apis", "/skiff"}

// proxiedPaths are single paths also forwarded (the control-plane view shows /readyz).
var proxiedPaths = map[string]bool{"/readyz": true, "/healthz": true, "/livez": true, "/version": true}

// rejectedPaths are never forwarded, as kubectl proxy's default --reject-paths: a page has no
// business executing in or attaching to containers with the node's admin credentials.
var rejectedPaths = regexp.MustCompile(`^/api/.*/pods/.*/(exec|attach|portforward)$`)

// proxyDecision is what the loopback server does with one request.
type proxyDecision int

const (
	serveAsset proxyDecision = iota
	redirectToPage
	forward
	refuseHost
	refuseOrigin
	refusePath
	notFound
)

// decide is the loopback server's pure routing and safety decision for one request. Only
// loopback host names are served (a DNS-rebinding page cannot reach the admin credentials),
// and a request that names an Origin must come from the server's own origin (a foreign page
// cannot make the browser send a write).
func decide(method, host, origin, path string) proxyDecision {
	if !loopbackHost(host) {
		return refuseHost
	}
	if origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != host || (u.Scheme != "http" && u.Scheme != "https") {
			return refuseOrigin
		}
	}
	switch {
	case path == "/" || path == "":
		return redirectToPage
	case IsAsset(method, path):
		return serveAsset
	case proxiedPaths[path]:
		return forward
	}
	for _, p := range proxiedPrefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			if rejectedPaths.MatchString(path) {
				return refusePath
			}
			return forward
		}
	}
	return notFound
}

// loopbackHost reports whether a Host header names this machine's loopback: localhost or a
// loopback address, with or without a port.
func loopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// NewProxy is the handler of `skiff dashboard`: the page under Prefix, and /api, /apis and
// /skiff forwarded to the API server of cfg with cfg's credentials (the page then needs no
// token). Watches and followed logs are streamed (flushed at once).
func NewProxy(cfg *rest.Config, log *slog.Logger) (http.Handler, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("dashboard proxy: API server address %q: %w", cfg.Host, err)
	}
	if target.Scheme == "" {
		target.Scheme = "https"
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("dashboard proxy: transport for %s: %w", cfg.Host, err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
			// Credentials are the proxy's own; anything the browser sent is dropped.
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Del("Origin")
			pr.Out.Header.Del("Referer")
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Warn("dashboard proxy: API server unreachable", "path", r.URL.Path, "err", err)
			http.Error(w, "API server unreachable: "+err.Error(), http.StatusBadGateway)
		},
	}
	assets := Assets()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch decide(r.Method, r.Host, r.Header.Get("Origin"), r.URL.Path) {
		case serveAsset:
			assets.ServeHTTP(w, r)
		case redirectToPage:
			http.Redirect(w, r, Prefix, http.StatusFound)
		case forward:
			rp.ServeHTTP(w, r)
		case refuseHost:
			http.Error(w, "the dashboard proxy serves only loopback host names", http.StatusForbidden)
		case refuseOrigin:
			http.Error(w, "cross-origin requests are refused", http.StatusForbidden)
		case refusePath:
			http.Error(w, "exec, attach and port-forward are not proxied", http.StatusForbidden)
		default:
			http.NotFound(w, r)
		}
	}), nil
}

// Serve runs `skiff dashboard`'s server on addr (a loopback host:port) until ctx ends, calling
// listening with the page's URL once it accepts connections.
func Serve(ctx context.Context, addr string, cfg *rest.Config, log *slog.Logger, listening func(url string)) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dashboard: address %q: %w", addr, err)
	}
	if !loopbackHost(host) {
		return fmt.Errorf("dashboard: %s is not a loopback address: the proxy holds admin credentials", host)
	}
	h, err := NewProxy(cfg, log)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("dashboard: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	listening("http://" + l.Addr().String() + Prefix)
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("dashboard: serve: %w", err)
	}
	return nil
}
