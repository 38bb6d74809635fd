package kubelet

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/skiff-sh/skiff/internal/podstream"
)

// serveWebSocketStream answers the WebSocket forms of exec and port-forward itself and reports
// whether it did (attach, of either protocol, is the kubelet's own: attach.go). The runtime's streaming server (containerd's) speaks SPDY and the
// WebSocket channel protocols only up to v4: it refuses v5.channel.k8s.io, and SPDY tunneled in
// WebSocket messages, with a bare 403 from its handshake. So exec and attach WebSockets, of any
// channel protocol, are translated here to SPDY toward the runtime's URL, and a port-forward
// tunnel is unwrapped into the runtime's SPDY upgrade; port-forward's own WebSocket channel
// protocol, which the runtime serves, and every SPDY request are proxied as they are.
func (s *server) serveWebSocketStream(w http.ResponseWriter, r *http.Request, runtimeURL *url.URL) bool {
	if !podstream.IsWebSocket(r) {
		return false
	}
	up := podstream.Upstream{URL: runtimeURL}
	switch {
	case strings.HasPrefix(r.URL.Path, "/portForward/"):
		if !podstream.IsTunnel(r) {
			return false
		}
		podstream.ServeTunnel(w, r, up, s.log)
	default: // exec
		podstream.ServeExec(w, r, podstream.OptionsFromQuery(r.URL.Query()), up, s.log)
	}
	return true
}
