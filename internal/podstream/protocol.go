package podstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/skiff-sh/skiff/internal/queryparam"
)

// The exec and attach channel subprotocols over WebSocket. Each message starts with its channel
// (stdin 0, stdout 1, stderr 2, error 3, resize 4): a byte, or in the base64 forms a digit before
// base64 text. v5 adds the close signal (255, channel) that half-closes stdin; v4 writes the
// outcome on the error channel as a Status (exit codes included); older ones write only the message
// of a failure.
const (
	protocolV5       = remotecommand.StreamProtocolV5Name
	protocolV4       = remotecommand.StreamProtocolV4Name
	protocolV4Base64 = "v4.base64.channel.k8s.io"
	protocolV3       = remotecommand.StreamProtocolV3Name
	protocolV2       = remotecommand.StreamProtocolV2Name
	protocolV1       = wsstream.ChannelWebSocketProtocol
	protocolBase64   = wsstream.Base64ChannelWebSocketProtocol
)

// execProtocol is how a channel subprotocol frames messages and the outcome.
type execProtocol struct {
	// binary: raw bytes after the channel byte; otherwise base64 text after a channel digit.
	binary bool
	// statusObject: the error channel carries a JSON Status, success included (v4 and later).
	statusObject bool
}

// lookupExecProtocol is the framing of a subprotocol the exec and attach WebSockets answer ("" is a
// client that asked for none: channel.k8s.io).
func lookupExecProtocol(name string) (execProtocol, bool) {
	switch name {
	case protocolV5, protocolV4:
		return execProtocol{binary: true, statusObject: true}, true
	case protocolV4Base64:
		return execProtocol{statusObject: true}, true
	case protocolV3, protocolV2, protocolV1, "":
		return execProtocol{binary: true}, true
	case protocolBase64:
		return execProtocol{}, true
	}
	return execProtocol{}, false
}

// execProtocolNames are the subprotocols offered back in a refusal, newest first.
func execProtocolNames() []string {
	return []string{protocolV5, protocolV4, protocolV4Base64, protocolV3, protocolV2, protocolV1, protocolBase64}
}

// Options are the streams an exec or attach asks for.
type Options struct {
	Stdin, Stdout, Stderr, TTY bool
}

// OptionsFromQuery reads an exec or attach request's streams under either the API's names (stdin,
// stdout, stderr) or the kubelet's (input, output, error), with Kubernetes' boolean rules. A
// terminal has no separate stderr: it is folded into stdout, as the runtime does.
func OptionsFromQuery(q url.Values) Options {
	o := Options{
		Stdin:  queryparam.AnyBool(q, "stdin", "input"),
		Stdout: queryparam.AnyBool(q, "stdout", "output"),
		Stderr: queryparam.AnyBool(q, "stderr", "error"),
		TTY:    queryparam.AnyBool(q, "tty"),
	}
	if o.TTY {
		o.Stderr = false
	}
	return o
}

// channelTypes are the five channels of an exec or attach WebSocket: the streams not asked for are
// ignored; the error channel is always written and the resize channel always read.
func channelTypes(o Options) []wsstream.ChannelType {
	pick := func(on bool, t wsstream.ChannelType) wsstream.ChannelType {
		if on {
			return t
		}
		return wsstream.IgnoreChannel
	}
	return []wsstream.ChannelType{
		remotecommand.StreamStdIn:  pick(o.Stdin, wsstream.ReadChannel),
		remotecommand.StreamStdOut: pick(o.Stdout, wsstream.WriteChannel),
		remotecommand.StreamStdErr: pick(o.Stderr, wsstream.WriteChannel),
		remotecommand.StreamErr:    wsstream.WriteChannel,
		remotecommand.StreamResize: wsstream.ReadChannel,
	}
}

// channelProtocols is the WebSocket connection's table: every exec subprotocol with o's channels.
func channelProtocols(o Options) map[string]wsstream.ChannelProtocolConfig {
	channels := channelTypes(o)
	out := map[string]wsstream.ChannelProtocolConfig{"": {Binary: true, Channels: channels}}
	for _, name := range execProtocolNames() {
		p, _ := lookupExecProtocol(name)
		out[name] = wsstream.ChannelProtocolConfig{Binary: p.binary, Channels: channels}
	}
	return out
}

// offeredProtocols are the subprotocols a WebSocket request offers, in its order.
func offeredProtocols(h http.Header) []string {
	var out []string
	for _, v := range h.Values(wsstream.WebSocketProtocolHeader) {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// chooseExecProtocol is the subprotocol the WebSocket handshake will pick: the first offered that
// is served (none offered is the unversioned protocol); ok is false when none of the offered is.
func chooseExecProtocol(offered []string) (string, bool) {
	if len(offered) == 0 {
		return "", true
	}
	for _, p := range offered {
		if _, ok := lookupExecProtocol(p); ok {
			return p, true
		}
	}
	return "", false
}

// unsupportedProtocols is the 400 for a WebSocket that offers none of the served subprotocols (the
// handshake alone would answer a bare 403, which reads as an authorization failure).
func unsupportedProtocols(offered, served []string) *apierrors.StatusError {
	return apierrors.NewBadRequest(fmt.Sprintf("none of the requested WebSocket subprotocols %v is supported; supported: %v", offered, served))
}

// statusFor is the outcome of a finished stream as the error channel reports it: success, a
// NonZeroExitCode failure with the exit code as a cause, the upstream's own Status, or an internal
// error with the message.
func statusFor(err error) *metav1.Status {
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}}
	var exitErr exec.ExitError
	var statusErr apierrors.APIStatus
	switch {
	case err == nil:
		st.Status = metav1.StatusSuccess
		return st
	case errors.As(err, &exitErr) && exitErr.Exited():
		st.Status = metav1.StatusFailure
		st.Reason = remotecommand.NonZeroExitCodeReason
		st.Message = fmt.Sprintf("command terminated with non-zero exit code: exit status %d", exitErr.ExitStatus())
		st.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{
			Type: remotecommand.ExitCodeCauseType, Message: strconv.Itoa(exitErr.ExitStatus()),
		}}}
		return st
	case errors.As(err, &statusErr):
		out := statusErr.Status()
		out.TypeMeta = st.TypeMeta
		return &out
	}
	out := apierrors.NewInternalError(err).ErrStatus
	out.TypeMeta = st.TypeMeta
	return &out
}

// errorChannelMessage is what the error channel carries for an outcome under a subprotocol: the
// Status as JSON from v4 on, the failure's message before (nothing on success).
func errorChannelMessage(protocol string, st *metav1.Status) ([]byte, error) {
	p, _ := lookupExecProtocol(protocol)
	if p.statusObject {
		data, err := json.Marshal(st)
		if err != nil {
			return nil, fmt.Errorf("encode stream status: %w", err)
		}
		return data, nil
	}
	if st.Status == metav1.StatusSuccess {
		return nil, nil
	}
	return []byte(st.Message), nil
}

// tunnelUpstreamProtocols are the SPDY protocols (portforward.k8s.io) a tunneling WebSocket offers
// under the SPDY/3.1+ prefix, in its order; empty when it offers none.
func tunnelUpstreamProtocols(offered []string) []string {
	var out []string
	for _, p := range offered {
		if rest, ok := strings.CutPrefix(p, portforward.WebsocketsSPDYTunnelingPrefix); ok && strings.HasSuffix(rest, portforward.KubernetesSuffix) {
			out = append(out, rest)
		}
	}
	return out
}

// IsWebSocket reports a WebSocket upgrade request.
func IsWebSocket(r *http.Request) bool { return wsstream.IsWebSocketRequest(r) }

// IsTunnel reports a WebSocket that carries SPDY (port-forward's SPDY/3.1+portforward.k8s.io).
func IsTunnel(r *http.Request) bool { return wsstream.IsWebSocketRequestWithTunnelingProtocol(r) }

// writeStatus answers a request that was not upgraded with a Kubernetes Status.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	data, mErr := json.Marshal(&st)
	if mErr != nil {
		http.Error(w, st.Message, int(st.Code))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(data)
}
