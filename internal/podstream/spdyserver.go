package podstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	clientremotecommand "k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// StreamCreationTimeout bounds how long a SPDY client may take to open its streams after the
// upgrade, as Kubernetes' kubelet bounds it.
const StreamCreationTimeout = 30 * time.Second

// spdyProtocols are the remotecommand protocols served over SPDY, newest first. v5 over SPDY is v4
// (its close signal is a WebSocket matter: SPDY half-closes stdin by closing the stream).
func spdyProtocols() []string {
	return []string{protocolV5, protocolV4, protocolV3, protocolV2, remotecommand.StreamProtocolV1Name}
}

// expectedStreams are the stream types a SPDY client of protocol opens for opts: the error stream
// always, the streams asked for, and the resize stream with a terminal from v3 on.
func expectedStreams(protocol string, opts Options) []string {
	out := []string{corev1.StreamTypeError}
	for _, s := range []struct {
		on   bool
		kind string
	}{{opts.Stdin, corev1.StreamTypeStdin}, {opts.Stdout, corev1.StreamTypeStdout}, {opts.Stderr, corev1.StreamTypeStderr}} {
		if s.on {
			out = append(out, s.kind)
		}
	}
	switch protocol {
	case protocolV5, protocolV4, protocolV3:
		if opts.TTY {
			out = append(out, corev1.StreamTypeResize)
		}
	}
	return out
}

// ServeSPDY answers an exec or attach SPDY upgrade (remotecommand v5 down to channel.k8s.io) with
// s, as the server side of client-go's SPDY executor: it waits for the streams the client opens
// (by their streamType header), hands them to s, and writes s's outcome on the error stream (a
// Status from v4 on, the failure's message before) before it closes the connection. A request
// offering none of the protocols is refused by the handshake (403 with the supported ones).
func ServeSPDY(w http.ResponseWriter, r *http.Request, opts Options, s Streamer, log *slog.Logger) {
	protocol, err := httpstream.Handshake(r, w, spdyProtocols())
	if err != nil {
		// The handshake has answered the client.
		log.Debug("spdy stream handshake", "path", r.URL.Path, "err", err)
		return
	}
	// Streams are taken until the expected ones are in; a later one is refused at once (a
	// handler that blocked would stall the connection's frame loop).
	collected := make(chan struct{})
	arrived := make(chan arrivedStream)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(hijacker{w}, r, func(st httpstream.Stream, replySent <-chan struct{}) error {
		select {
		case arrived <- arrivedStream{st, replySent}:
			return nil
		case <-collected:
			return fmt.Errorf("unexpected stream %q", st.Headers().Get(corev1.StreamType))
		}
	})
	if conn == nil {
		// The upgrader has answered the client.
		return
	}
	defer conn.Close()
	streams, err := collectStreams(r.Context(), conn, arrived, expectedStreams(protocol, opts))
	close(collected)
	if err != nil {
		log.Debug("spdy streams", "path", r.URL.Path, "protocol", protocol, "err", err)
		return
	}
	// The session ends when the client goes away (its connection closes).
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var watchers sync.WaitGroup
	defer watchers.Wait()
	watchers.Go(func() {
		select {
		case <-conn.CloseChan():
			cancel()
		case <-ctx.Done():
		}
	})
	sizes := &sizeQueue{ctx: ctx, sizes: make(chan clientremotecommand.TerminalSize)}
	so := clientremotecommand.StreamOptions{Tty: opts.TTY}
	if st := streams[corev1.StreamTypeStdin]; st != nil {
		so.Stdin = st
	}
	if st := streams[corev1.StreamTypeStdout]; st != nil {
		so.Stdout = cancelOnError{w: st, cancel: cancel}
	}
	if st := streams[corev1.StreamTypeStderr]; st != nil {
		so.Stderr = cancelOnError{w: st, cancel: cancel}
	}
	if st := streams[corev1.StreamTypeResize]; st != nil {
		so.TerminalSizeQueue = sizes
		watchers.Go(func() { readResizes(st, sizes, opts.TTY, log) })
	}
	streamErr := s.StreamWithContext(ctx, so)
	if streamErr != nil {
		log.Debug("stream ended", "path", r.URL.Path, "protocol", protocol, "err", streamErr)
	}
	if ctx.Err() == nil {
		writeOutcome(streams[corev1.StreamTypeError], protocol, streamErr, log)
	}
	// Half-close what the client reads, so its copies end, then the connection, which ends the
	// resize stream's reader.
	for _, st := range streams {
		_ = st.Close()
	}
	cancel()
	_ = conn.Close()
}

// writeOutcome writes a session's outcome on the error stream as protocol frames it.
func writeOutcome(errStream io.Writer, protocol string, streamErr error, log *slog.Logger) {
	msg, err := errorChannelMessage(protocol, statusFor(streamErr))
	if err != nil {
		log.Warn("stream status", "err", err)
	}
	if len(msg) == 0 {
		return
	}
	if _, err := errStream.Write(msg); err != nil {
		log.Debug("write stream status", "err", err)
	}
}

// arrivedStream is a stream the client opened and the signal that its reply has gone out.
type arrivedStream struct {
	stream    httpstream.Stream
	replySent <-chan struct{}
}

// collectStreams waits for the client to open the expected streams, keyed by type, and for their
// replies to go out (before which a stream is not to be used, as the kubelet has it).
func collectStreams(ctx context.Context, conn httpstream.Connection, arrived <-chan arrivedStream, expected []string) (map[string]httpstream.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, StreamCreationTimeout)
	defer cancel()
	want := map[string]bool{}
	for _, kind := range expected {
		want[kind] = true
	}
	streams := map[string]httpstream.Stream{}
	var replies []<-chan struct{}
	for len(want) > 0 {
		select {
		case a := <-arrived:
			st := a.stream
			kind := st.Headers().Get(corev1.StreamType)
			if _, dup := streams[kind]; dup {
				return nil, fmt.Errorf("a second %q stream", kind)
			}
			streams[kind] = st
			replies = append(replies, a.replySent)
			delete(want, kind)
		case <-conn.CloseChan():
			return nil, fmt.Errorf("connection closed with %d of %d streams open", len(streams), len(expected))
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d streams open: %w", len(streams), len(expected), ctx.Err())
		}
	}
	for _, sent := range replies {
		select {
		case <-sent:
		case <-conn.CloseChan():
			return nil, errors.New("connection closed before the streams were answered")
		case <-ctx.Done():
			return nil, fmt.Errorf("streams not answered: %w", ctx.Err())
		}
	}
	return streams, nil
}
