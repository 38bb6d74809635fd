package apiserver

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Websocket subprotocols a pods/log reader may ask for, as Kubernetes serves them: raw bytes in
// binary frames, or base64 in text frames. No protocol means binary.
const (
	logProtocolBinary = "binary.k8s.io"
	logProtocolBase64 = "base64.binary.k8s.io"
)

// isWebSocketRequest reports a websocket upgrade (Connection: upgrade, Upgrade: websocket).
func isWebSocketRequest(r *http.Request) bool {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for _, token := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(token), "upgrade") {
				return true
			}
		}
	}
	return false
}

// logProtocol picks the subprotocol to answer from those the client offers: binary first, then
// base64; ok is false when it offers only others.
func logProtocol(offered []string) (protocol string, ok bool) {
	if len(offered) == 0 {
		return "", true
	}
	for _, want := range []string{logProtocolBinary, logProtocolBase64} {
		for _, p := range offered {
			if strings.TrimSpace(p) == want {
				return want, true
			}
		}
	}
	return "", false
}

// serveLogWebSocket answers pods/log asked for over a websocket, as kube-apiserver does: it reads
// the log from the kubelet at target over plain HTTP and sends each chunk as one message, then
// closes the connection when the log ends (or, with follow, when the container stops). Errors
// before the upgrade are ordinary Status responses.
func (h *resourceHandler) serveLogWebSocket(w http.ResponseWriter, r *http.Request, target *url.URL) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, target.String(), nil)
	if err != nil {
		h.s.writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	resp, err := h.s.kubeletTransport.RoundTrip(req)
	if err != nil {
		h.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error dialing kubelet %s: %v", target.Host, err)))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		status := apierrors.NewBadRequest(strings.TrimSpace(string(msg)))
		status.ErrStatus.Code = int32(resp.StatusCode)
		h.s.writeError(w, r, status)
		return
	}
	var protocol string
	server := websocket.Server{
		Handshake: func(cfg *websocket.Config, _ *http.Request) error {
			p, ok := logProtocol(cfg.Protocol)
			if !ok {
				return fmt.Errorf("none of the offered protocols %v is supported", cfg.Protocol)
			}
			protocol = p
			cfg.Protocol = nil
			if p != "" {
				cfg.Protocol = []string{p}
			}
			return nil
		},
		Handler: func(ws *websocket.Conn) {
			defer ws.Close()
			if protocol == logProtocolBase64 {
				ws.PayloadType = websocket.TextFrame
			} else {
				ws.PayloadType = websocket.BinaryFrame
			}
			// The client sends nothing; reading notices when it goes away.
			go func() { _, _ = io.Copy(io.Discard, ws) }()
			buf := make([]byte, 32<<10)
			for {
				n, err := resp.Body.Read(buf)
				if n > 0 {
					chunk := buf[:n]
					if protocol == logProtocolBase64 {
						chunk = []byte(base64.StdEncoding.EncodeToString(chunk))
					}
					if _, werr := ws.Write(chunk); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		},
	}
	server.ServeHTTP(hijackable{w}, r)
}

// hijackable gives the websocket server the connection under wrapped response writers, which
// http.ResponseController reaches through Unwrap.
type hijackable struct{ http.ResponseWriter }

func (h hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}
