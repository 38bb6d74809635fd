package podstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/net/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/streaming/pkg/httpstream"
)

// ServeTunnel answers a WebSocket that tunnels SPDY (port-forward's SPDY/3.1+portforward.k8s.io):
// it first asks up for the SPDY upgrade with the protocols the client offers (so a refusal is the
// upstream's Status, with its code, before any upgrade), then accepts the WebSocket with the
// protocol the upstream chose and copies bytes: binary messages from the client to the upstream
// connection, the upstream's bytes to the client as binary messages, until either side closes.
func ServeTunnel(w http.ResponseWriter, r *http.Request, up Upstream, log *slog.Logger) {
	offered := offeredProtocols(r.Header)
	protocols := tunnelUpstreamProtocols(offered)
	if len(protocols) == 0 {
		writeStatus(w, unsupportedProtocols(offered, []string{portforward.WebsocketsSPDYTunnelingPortForwardV1}))
		return
	}
	backend, reader, chosen, statusErr := dialSPDY(r.Context(), up, protocols)
	if statusErr != nil {
		writeStatus(w, statusErr)
		return
	}
	defer backend.Close()
	server := websocket.Server{
		Handshake: func(cfg *websocket.Config, _ *http.Request) error {
			cfg.Protocol = []string{portforward.WebsocketsSPDYTunnelingPrefix + chosen}
			return nil
		},
		Handler: func(ws *websocket.Conn) {
			ws.PayloadType = websocket.BinaryFrame
			splice(ws, backend, reader)
		},
	}
	server.ServeHTTP(hijacker{w}, r)
}

// splice copies both ways between the client's WebSocket and the upstream connection (read through
// upstream, which may hold bytes that came with the upgrade response); when one direction ends,
// both connections close so the other ends too.
func splice(ws *websocket.Conn, backend net.Conn, upstream io.Reader) {
	var copies sync.WaitGroup
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = ws.Close()
			_ = backend.Close()
		})
	}
	copies.Go(func() {
		defer closeBoth()
		_, _ = io.Copy(backend, ws)
	})
	copies.Go(func() {
		defer closeBoth()
		_, _ = io.Copy(ws, upstream)
	})
	copies.Wait()
}

// dialSPDY asks up for an SPDY upgrade offering protocols and returns the upgraded connection,
// the reader to read it through and the protocol the upstream chose (the first offered when it
// names none). Any other answer is returned as a Status with the upstream's code and message.
func dialSPDY(ctx context.Context, up Upstream, protocols []string) (net.Conn, io.Reader, string, *apierrors.StatusError) {
	unavailable := func(err error) (net.Conn, io.Reader, string, *apierrors.StatusError) {
		return nil, nil, "", apierrors.NewServiceUnavailable(fmt.Sprintf("error dialing backend %s: %v", up.URL.Host, err))
	}
	rt, err := up.roundTripper()
	if err != nil {
		return nil, nil, "", apierrors.NewInternalError(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, up.URL.String(), nil)
	if err != nil {
		return nil, nil, "", apierrors.NewInternalError(err)
	}
	req.Header.Set(httpstream.HeaderConnection, httpstream.HeaderUpgrade)
	req.Header.Set(httpstream.HeaderUpgrade, "SPDY/3.1")
	for _, p := range protocols {
		req.Header.Add(httpstream.HeaderProtocolVersion, p)
	}
	conn, err := rt.Dial(req)
	if err != nil {
		return unavailable(err)
	}
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, req)
	if err != nil {
		conn.Close()
		return unavailable(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		conn.Close()
		return nil, nil, "", upstreamRefusal(resp.StatusCode, body)
	}
	chosen := resp.Header.Get(httpstream.HeaderProtocolVersion)
	if chosen == "" {
		chosen = protocols[0]
	}
	return conn, reader, chosen, nil
}

// upstreamRefusal is an upstream's non-upgrade answer as a Status: its own when it sent one, else
// its text with its code.
func upstreamRefusal(code int, body []byte) *apierrors.StatusError {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Code != 0 {
		return &apierrors.StatusError{ErrStatus: st}
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		msg = http.StatusText(code)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: int32(code), Reason: reasonForCode(code), Message: msg,
	}}
}

// reasonForCode is the Status reason Kubernetes gives an HTTP code.
func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusInternalServerError:
		return metav1.StatusReasonInternalError
	}
	return metav1.StatusReasonUnknown
}
