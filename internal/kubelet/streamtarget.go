package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/podstream"
)

// streamOptions are the streams an exec or attach asks for, as the kubelet passes them to the
// runtime.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// parseStreamOptions reads the streams of an exec or attach request the way Kubernetes' kubelet
// does (remotecommand's NewOptions) before it asks the runtime: a terminal carries the process's
// stderr in its one output stream, so stderr is dropped when tty is asked for. The Python and
// JavaScript clients send tty=true&stderr=true for a terminal; passed on as they were, the runtime
// refused the pair ("tty and stderr cannot both be true") and the client saw a 500 handshake.
func parseStreamOptions(q url.Values) (streamOptions, error) {
	// One reading of the query for every stream path (podstream: a terminal drops stderr).
	p := podstream.OptionsFromQuery(q)
	o := streamOptions{stdin: p.Stdin, stdout: p.Stdout, stderr: p.Stderr, tty: p.TTY}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

func (o streamOptions) execRequest(containerID string, cmd []string) *runtimeapi.ExecRequest {
	return &runtimeapi.ExecRequest{ContainerId: containerID, Cmd: cmd, Tty: o.tty, Stdin: o.stdin, Stdout: o.stdout, Stderr: o.stderr}
}

// streamSession is the one place an exec or attach request is read before the runtime is asked:
// the streams, normalized as Kubernetes' kubelet normalizes them, and the container, which must be
// running. It answers a request it refuses (400, with the reason) and reports whether to go on.
func (s *server) streamSession(w http.ResponseWriter, r *http.Request, state *podRuntimeState, container string) (streamOptions, string, bool) {
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return opts, "", false
	}
	id, err := s.streamContainerID(r.Context(), state, container)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return opts, "", false
	}
	return opts, id, true
}

// processState is what the host says about a container's process.
type processState int

const (
	// processUnknown: the runtime named no process, or the host could not be asked.
	processUnknown processState = iota
	processAlive
	// processGone: the process has exited (reaped, or a zombie waiting to be).
	processGone
)

// streamTarget is the decision on a container an exec or attach is for.
type streamTarget int

const (
	// targetRunning: hand the session to the runtime.
	targetRunning streamTarget = iota
	// targetNotRunning: refuse; the container has exited (or never ran).
	targetNotRunning
	// targetExiting: the process is gone but the runtime still reports the container running,
	// while it finishes the exit (containerd deletes the task, waiting for the output to be
	// copied to the log, and only then records the exit). Refuse once the runtime has recorded it.
	targetExiting
)

// decideStreamTarget decides on an exec or attach from the runtime's view of the container and
// the host's view of its process. The runtime's view lags the process by the time it takes to
// finish an exit (about 100 ms with containerd 1.6): an attach in that window was handed to the
// runtime, which either attached to output that had already ended and reported success with
// nothing streamed (kubectl run -i then printed nothing, since it falls back to the logs only when
// the attach fails), or failed with its raw "failed to load task: no running task found".
func decideStreamTarget(status *runtimeapi.ContainerStatus, process processState) streamTarget {
	switch {
	case !running(status):
		return targetNotRunning
	case process == processGone:
		return targetExiting
	default:
		return targetRunning
	}
}

// processStateFromStat reads a process's state from its /proc/<pid>/stat: the state letter
// follows the command name, which is in parentheses and may itself hold spaces or ')'.
func processStateFromStat(stat []byte) processState {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 || end+2 >= len(stat) {
		return processUnknown
	}
	switch stat[end+2] {
	case 'Z', 'X', 'x':
		return processGone
	default:
		return processAlive
	}
}

// containerProcesses is implemented by runtimes that can name a running container's host
// process (cri.Client, from containerd's verbose status).
type containerProcesses interface {
	ContainerPID(ctx context.Context, containerID string) (int, error)
}

// containerProcessState asks the runtime for the container's process and the host for its state.
// Anything it cannot learn is processUnknown, which leaves the runtime's view to decide.
func (s *server) containerProcessState(ctx context.Context, containerID string) processState {
	runtime, ok := s.runtime.(containerProcesses)
	if !ok {
		return processUnknown
	}
	pid, err := runtime.ContainerPID(ctx, containerID)
	if err != nil || pid <= 0 {
		return processUnknown
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return processGone
	case err != nil:
		return processUnknown
	}
	return processStateFromStat(stat)
}

// exitSettleTimeout bounds the wait for the runtime to record an exit it has not yet recorded.
const exitSettleTimeout = 5 * time.Second

// exitSettlePoll is how often the runtime is asked meanwhile.
const exitSettlePoll = 10 * time.Millisecond

// streamContainerID returns the ID of the container an exec or attach may be handed to, or an
// error that says the container is not running. An exited container is refused as Kubernetes'
// kubelet refuses it (kubectl run -i then prints the container's logs instead): its output is
// complete in the log, where an attach would see none of it.
func (s *server) streamContainerID(ctx context.Context, state *podRuntimeState, container string) (string, error) {
	notRunning := fmt.Errorf("container %s is not running", container)
	cur := state.latest(container, "")
	var process processState
	if running(cur) {
		process = s.containerProcessState(ctx, cur.Id)
	}
	switch decideStreamTarget(cur, process) {
	case targetRunning:
		return cur.Id, nil
	case targetExiting:
		// Wait until the runtime has recorded the exit, so the logs the client turns to hold
		// all the output (containerd records it after the output is copied to the log).
		if err := s.waitForRecordedExit(ctx, cur.Id); err != nil {
			return "", fmt.Errorf("%w: %w", notRunning, err)
		}
	}
	return "", notRunning
}

// waitForRecordedExit polls the runtime until it no longer reports the container running.
func (s *server) waitForRecordedExit(ctx context.Context, containerID string) error {
	deadline := s.clock.Now().Add(exitSettleTimeout)
	for {
		status, err := s.runtime.ContainerStatus(ctx, containerID)
		if err != nil || !running(status) {
			return nil //nolint:nilerr // a container the runtime no longer has has exited too.
		}
		if !s.clock.Now().Before(deadline) {
			return fmt.Errorf("runtime still reports it running %s after its process exited", exitSettleTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.clock.After(exitSettlePoll):
		}
	}
}
