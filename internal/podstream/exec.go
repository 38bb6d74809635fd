package podstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	clientremotecommand "k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// Streamer carries an exec or attach session once its client's streams are open: client-go's
// executors toward an upstream, or a server's own implementation (the kubelet's attach, which
// reads the container's output from its log).
type Streamer interface {
	StreamWithContext(ctx context.Context, options clientremotecommand.StreamOptions) error
}

// NewExecutor is client-go's SPDY executor toward up, which negotiates the newest remotecommand
// protocol the upstream speaks.
func NewExecutor(up Upstream) (clientremotecommand.Executor, error) {
	rt, err := up.roundTripper()
	if err != nil {
		return nil, err
	}
	executor, err := clientremotecommand.NewSPDYExecutorForTransports(rt, clientspdy.NewUpgraderForStreaming(rt), http.MethodPost, up.URL)
	if err != nil {
		return nil, fmt.Errorf("spdy executor for %s: %w", up.URL.Redacted(), err)
	}
	return executor, nil
}

// ServeExec answers an exec or attach WebSocket (any channel subprotocol) and carries the stream
// on to up over SPDY with client-go's executor, which negotiates the newest protocol the upstream
// speaks: stdin (half-closed by v5's close signal), stdout, stderr and terminal resizes cross
// over, and the outcome (success, the exit code, or the upstream's error) is written on the error
// channel before the socket closes. A request offering no served subprotocol gets a 400 Status.
func ServeExec(w http.ResponseWriter, r *http.Request, opts Options, up Upstream, log *slog.Logger) {
	offered := offeredProtocols(r.Header)
	if _, ok := chooseExecProtocol(offered); !ok {
		writeStatus(w, unsupportedProtocols(offered, execProtocolNames()))
		return
	}
	executor, err := NewExecutor(up)
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	ServeExecTo(w, r, opts, executor, log)
}

// ServeExecTo answers an exec or attach WebSocket (any channel subprotocol) with s: the client's
// channels are s's streams, and s's outcome is written on the error channel before the socket
// closes. A request offering no served subprotocol gets a 400 Status.
func ServeExecTo(w http.ResponseWriter, r *http.Request, opts Options, s Streamer, log *slog.Logger) {
	offered := offeredProtocols(r.Header)
	if _, ok := chooseExecProtocol(offered); !ok {
		writeStatus(w, unsupportedProtocols(offered, execProtocolNames()))
		return
	}
	conn := wsstream.NewConn(channelProtocols(opts))
	protocol, streams, err := conn.Open(hijacker{w}, r)
	if err != nil {
		// The WebSocket handshake has answered the client already.
		log.Debug("websocket stream not opened", "path", r.URL.Path, "err", err)
		return
	}
	defer conn.Close()

	// A hijacked request's context outlives its client; the stream ends when the client goes
	// away, which shows as a failed write or the end of the resize channel.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sizes := &sizeQueue{ctx: ctx, sizes: make(chan clientremotecommand.TerminalSize)}
	var resizes sync.WaitGroup
	resizes.Go(func() {
		readResizes(streams[remotecommand.StreamResize], sizes, opts.TTY, log)
		cancel()
	})
	streamErr := s.StreamWithContext(ctx, streamOptions(opts, streams, sizes, cancel))
	if streamErr != nil {
		log.Debug("stream ended", "path", r.URL.Path, "protocol", protocol, "err", streamErr)
	}
	if ctx.Err() == nil {
		msg, err := errorChannelMessage(protocol, statusFor(streamErr))
		if err != nil {
			log.Warn("stream status", "path", r.URL.Path, "err", err)
		}
		if len(msg) > 0 {
			if _, err := streams[remotecommand.StreamErr].Write(msg); err != nil {
				log.Debug("write stream status", "path", r.URL.Path, "err", err)
			}
		}
	}
	// Closing the socket ends the resize channel, so its reader returns.
	_ = conn.Close()
	resizes.Wait()
}

// streamOptions wires the WebSocket's channels to the executor: only the streams asked for, a
// failed write to the client cancels the stream.
func streamOptions(opts Options, streams []io.ReadWriteCloser, sizes *sizeQueue, cancel context.CancelFunc) clientremotecommand.StreamOptions {
	so := clientremotecommand.StreamOptions{Tty: opts.TTY}
	if opts.Stdin {
		so.Stdin = streams[remotecommand.StreamStdIn]
	}
	if opts.Stdout {
		so.Stdout = cancelOnError{w: streams[remotecommand.StreamStdOut], cancel: cancel}
	}
	if opts.Stderr {
		so.Stderr = cancelOnError{w: streams[remotecommand.StreamStdErr], cancel: cancel}
	}
	if opts.TTY {
		so.TerminalSizeQueue = sizes
	}
	return so
}

// cancelOnError cancels the stream when the client can no longer be written to.
type cancelOnError struct {
	w      io.Writer
	cancel context.CancelFunc
}

func (c cancelOnError) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.cancel()
	}
	return n, err
}

// sizeQueue hands the executor the terminal sizes read from the resize channel.
type sizeQueue struct {
	ctx   context.Context
	sizes chan clientremotecommand.TerminalSize
}

// Next implements remotecommand.TerminalSizeQueue: nil once the stream is over.
func (q *sizeQueue) Next() *clientremotecommand.TerminalSize {
	select {
	case s := <-q.sizes:
		return &s
	case <-q.ctx.Done():
		return nil
	}
}

// readResizes decodes the resize channel's JSON sizes ({"Width":80,"Height":24}) into q while tty
// holds (without a terminal they are read and dropped) until the channel ends, which it does only
// with the connection: no client half-closes it. A malformed size stops the resizes, not the
// stream, as the kubelet treats it.
func readResizes(r io.Reader, q *sizeQueue, tty bool, log *slog.Logger) {
	dec := json.NewDecoder(r)
	for {
		var size clientremotecommand.TerminalSize
		if err := dec.Decode(&size); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
				log.Debug("terminal resize", "err", err)
				_, _ = io.Copy(io.Discard, r)
			}
			return
		}
		if !tty {
			continue
		}
		select {
		case q.sizes <- size:
		case <-q.ctx.Done():
			return
		}
	}
}
