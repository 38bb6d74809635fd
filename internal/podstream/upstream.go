package podstream

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"k8s.io/streaming/pkg/httpstream/spdy"
)

const (
	// dialTimeout bounds connecting to an upstream dialed without a transport.
	dialTimeout = 10 * time.Second
	// pingPeriod keeps an idle SPDY connection to the upstream alive through NATs and proxies, as
	// client-go's SPDY round tripper does.
	pingPeriod = 5 * time.Second
)

// Upstream is the SPDY endpoint a WebSocket stream is carried on to.
type Upstream struct {
	// URL is the endpoint: https to a kubelet, http to a runtime's streaming server.
	URL *url.URL
	// Transport, when set, dials the upstream (its dialer and TLS configuration: the API server's
	// client certificate toward kubelets); otherwise URL is dialed directly, never via a proxy.
	Transport *http.Transport
}

// roundTripper is the SPDY round tripper that reaches u.
func (u Upstream) roundTripper() (*spdy.SpdyRoundTripper, error) {
	cfg := spdy.RoundTripperConfig{PingPeriod: pingPeriod}
	if u.Transport != nil {
		cfg.UpgradeTransport = u.Transport
	} else {
		// The upstream is a node-local or cluster-internal address: environment proxies are for
		// the outside world.
		cfg.Proxier = func(*http.Request) (*url.URL, error) { return nil, nil }
	}
	rt, err := spdy.NewRoundTripperWithConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("spdy round tripper for %s: %w", u.URL.Redacted(), err)
	}
	if u.Transport == nil {
		rt.Dialer = &net.Dialer{Timeout: dialTimeout}
	}
	return rt, nil
}

// hijacker hands the WebSocket server the connection under response writers that wrap it (the API
// server's), which http.ResponseController reaches through Unwrap.
type hijacker struct{ http.ResponseWriter }

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}
