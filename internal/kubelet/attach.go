package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	clientremotecommand "k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/podstream"
)

// containerAttach is the kubelet's own attach session (SPDY and WebSocket alike): the container's
// output is read from its CRI log file, from where the log stood when the request arrived, and
// only stdin and terminal resizes go to the runtime's attach.
//
// The runtime's attach (containerd's) streams only the output written after it has registered the
// attach, which it does some time after the kubelet hands it the session: a short-lived container
// that wrote its output and exited in between was attached to successfully with nothing streamed
// (kubectl run -i printed nothing, issue 32 item 7). The log holds every byte, in order, with the
// stream it was written to, and the runtime records the container's exit only once the output
// has reached the log, so following the log from the request's position until the exit loses
// nothing, whatever the runtime's lag.
type containerAttach struct {
	s           *server
	containerID string
	logPath     string
	// from is the log position the output is followed from.
	from int64
	// endsWithInput: the end of the client's stdin ends the attach (attachEndsWithInput).
	endsWithInput bool
}

// attachEndsWithInput reports whether the end of an attach's stdin ends the attach, as the
// runtime's attach (containerd's) has it: only a container whose stdin is closed after its first
// attach (stdinOnce, kubectl run -i) without a terminal keeps streaming its output until it exits;
// otherwise the client's stdin ending detaches it, and the container runs on.
func attachEndsWithInput(stdin, stdinOnce, tty bool) bool {
	return stdin && (!stdinOnce || tty)
}

// StreamWithContext implements podstream.Streamer: it streams the container's output until the
// container exits (success, as Kubernetes' attach reports it: no exit code) or ctx ends, and
// meanwhile carries the client's stdin and terminal sizes to the runtime.
func (a *containerAttach) StreamWithContext(ctx context.Context, so clientremotecommand.StreamOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	var input sync.WaitGroup
	if so.Stdin != nil || so.TerminalSizeQueue != nil {
		input.Go(func() {
			if a.forwardInput(ctx, so) && a.endsWithInput {
				cancel()
			}
		})
	}
	err := a.followOutput(ctx, so)
	// The container has exited or the client has gone: the runtime's attach has nothing more to
	// carry.
	cancel()
	input.Wait()
	return err
}

// runtimeAttachRequest is what the kubelet asks of the runtime's attach: the client's stdin and
// terminal only. The runtime refuses a session without any stream, so a terminal without stdin
// (resizes only) asks for stdout and drops it.
func runtimeAttachRequest(containerID string, stdin, tty bool) *runtimeapi.AttachRequest {
	return &runtimeapi.AttachRequest{ContainerId: containerID, Stdin: stdin, Tty: tty, Stdout: !stdin}
}

// forwardInput carries the client's stdin and terminal sizes to the runtime's attach until the
// runtime ends it or ctx ends, and reports whether the runtime ended it (at the end of stdin, or
// the container's). A failure is logged, not reported: the output, from the log, is complete
// without it (a container that exited before the runtime attached has no stdin left).
func (a *containerAttach) forwardInput(ctx context.Context, so clientremotecommand.StreamOptions) bool {
	req := runtimeAttachRequest(a.containerID, so.Stdin != nil, so.Tty)
	err := a.runtimeAttach(ctx, req, so)
	if err != nil && ctx.Err() == nil {
		a.s.log.Debug("attach input", "container", a.containerID, "err", err)
	}
	return err == nil && ctx.Err() == nil
}

func (a *containerAttach) runtimeAttach(ctx context.Context, req *runtimeapi.AttachRequest, so clientremotecommand.StreamOptions) error {
	target, err := a.s.runtime.Attach(ctx, req)
	if err != nil {
		return err
	}
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("runtime streaming URL %q: %w", target, err)
	}
	executor, err := podstream.NewExecutor(podstream.Upstream{URL: u})
	if err != nil {
		return err
	}
	out := clientremotecommand.StreamOptions{Stdin: so.Stdin, Tty: so.Tty, TerminalSizeQueue: so.TerminalSizeQueue}
	if req.Stdout {
		out.Stdout = io.Discard
	}
	if err := executor.StreamWithContext(ctx, out); err != nil {
		return fmt.Errorf("runtime attach to %s: %w", a.containerID, err)
	}
	return nil
}

// followOutput writes the log's lines from a.from to the client's streams as they are written,
// each to the stream its tag names (a terminal's one stream takes all), until the container
// exits or ctx ends.
func (a *containerAttach) followOutput(ctx context.Context, so clientremotecommand.StreamOptions) error {
	log := &logFile{path: a.logPath, from: a.from}
	defer log.Close()
	emit := func(l criLogLine) error {
		w := so.Stdout
		if l.stream == string(runtimeapi.Stderr) && !so.Tty {
			w = so.Stderr
		}
		if w == nil {
			return nil
		}
		if !l.partial {
			l.content = append(l.content, '\n')
		}
		_, err := w.Write(l.content)
		return err
	}
	return a.s.followLog(ctx, newCRILogReader(log), a.containerID, emit, func() {})
}

// logFile reads a container's log from a position; a log the runtime has not created yet reads
// as empty until it has (containerd creates it as it starts the container, so an attach to a
// container it has just started may come first).
type logFile struct {
	path string
	from int64
	f    *os.File
}

func (l *logFile) Read(p []byte) (int, error) {
	if l.f == nil {
		f, err := os.Open(l.path)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, io.EOF
		}
		if err != nil {
			return 0, fmt.Errorf("container log: %w", err)
		}
		if _, err := f.Seek(l.from, io.SeekStart); err != nil {
			_ = f.Close()
			return 0, fmt.Errorf("container log %s: %w", l.path, err)
		}
		l.f = f
	}
	return l.f.Read(p)
}

// Close closes the log if it was opened.
func (l *logFile) Close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// attachReplayWindow is how long after a container starts an attach still gets its output from
// the start. A client that attaches to a container it has just seen start (kubectl run -i, which
// attaches once the pod is reported Running) comes after the output its first moments wrote
// (echo hello wrote it before the kubelet had even reported the container running) but could not
// have attached any earlier; a container that started longer ago has a history an attach does
// not replay, as Kubernetes' attach does not.
const attachReplayWindow = 10 * time.Second

// attachFollowFrom decides where an attach follows the container's log from: its start when the
// container started within attachReplayWindow of the request (or the runtime named no start
// time, a container it is still starting), else where the log stood when the request arrived.
func attachFollowFrom(startedAt, requested time.Time, logSize int64) int64 {
	if startedAt.IsZero() || requested.Sub(startedAt) <= attachReplayWindow {
		return 0
	}
	return logSize
}

// logPosition is where a container's log ends now: the position an attach follows it from. A
// log not yet written to is followed from its start.
func logPosition(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// serveAttachStream answers an attach (SPDY or WebSocket) with the kubelet's own session.
func (s *server) serveAttachStream(w http.ResponseWriter, r *http.Request, opts streamOptions, a *containerAttach) {
	po := podstream.Options{Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr, TTY: opts.tty}
	if podstream.IsWebSocket(r) {
		podstream.ServeExecTo(w, r, po, a, s.log)
		return
	}
	podstream.ServeSPDY(w, r, po, a, s.log)
}
