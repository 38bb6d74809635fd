package kubelet

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestParseStreamOptions(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		want        streamOptions
		wantErr     string
	}{
		{name: "a terminal carries stderr in its output (Python and JavaScript clients ask for both)",
			query: "stdin=True&stdout=True&stderr=True&tty=True", want: streamOptions{stdin: true, stdout: true, tty: true}},
		{name: "kubectl's names", query: "input=1&output=1&error=1&tty=1", want: streamOptions{stdin: true, stdout: true, tty: true}},
		{name: "no terminal keeps stderr", query: "stdout=true&stderr=true", want: streamOptions{stdout: true, stderr: true}},
		{name: "stdin alone", query: "stdin=1", want: streamOptions{stdin: true}},
		{name: "no stream at all", query: "tty=1", wantErr: "at least 1 of stdin, stdout, stderr"},
		{name: "stderr alone, dropped by the terminal, leaves none", query: "stderr=1&tty=1", wantErr: "at least 1 of stdin, stdout, stderr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseStreamOptions(q)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseStreamOptions(%q) = %+v, %v; want %+v", tc.query, got, err, tc.want)
			}
		})
	}
}

func TestDecideStreamTarget(t *testing.T) {
	runningStatus := &runtimeapi.ContainerStatus{Id: "c", State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	exitedStatus := &runtimeapi.ContainerStatus{Id: "c", State: runtimeapi.ContainerState_CONTAINER_EXITED}
	for _, tc := range []struct {
		name    string
		status  *runtimeapi.ContainerStatus
		process processState
		want    streamTarget
	}{
		{"running with a live process", runningStatus, processAlive, targetRunning},
		{"running, the host cannot tell", runningStatus, processUnknown, targetRunning},
		{"running per the runtime, process gone: the runtime is still recording the exit", runningStatus, processGone, targetExiting},
		{"exited", exitedStatus, processUnknown, targetNotRunning},
		{"exited, process state ignored", exitedStatus, processAlive, targetNotRunning},
		{"created, never started", &runtimeapi.ContainerStatus{State: runtimeapi.ContainerState_CONTAINER_CREATED}, processUnknown, targetNotRunning},
		{"no container", nil, processUnknown, targetNotRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideStreamTarget(tc.status, tc.process); got != tc.want {
				t.Fatalf("decideStreamTarget = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestProcessStateFromStat(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want processState
	}{
		{"4242 (sleep) S 1 4242 4242 0 -1", processAlive},
		{"4242 (sh) R 1 4242", processAlive},
		{"4242 (echo) Z 1 4242 4242 0 -1", processGone},
		{"4242 (echo) X 1", processGone},
		{"4242 (a b) c) Z 1", processGone}, // a command name with spaces and ')'
		{"4242 (a) Z) S 1", processAlive},
		{"", processUnknown},
		{"4242 (trunc", processUnknown},
		{"4242 (x)", processUnknown},
	} {
		if got := processStateFromStat([]byte(tc.stat)); got != tc.want {
			t.Errorf("processStateFromStat(%q) = %v, want %v", tc.stat, got, tc.want)
		}
	}
}

// TestTerminalStreamsAskTheRuntimeWithoutStderr: exec with tty and stderr both asked for reaches
// the runtime with stderr dropped; the runtime refuses the pair (issue 32, item 5). Attach's
// runtime request is TestAttachTerminalCarriesStdinToTheRuntime's.
func TestTerminalStreamsAskTheRuntimeWithoutStderr(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("box").obj())
	h.waitPod("default", "box", "running", podRunning)
	const terminal = "stdin=True&stdout=True&stderr=True&tty=True"
	h.get("/exec/default/box/app?command=sh&"+terminal, true)
	execs := h.runtime.ExecRequests()
	if len(execs) != 1 {
		t.Fatalf("runtime asked for %d execs, want 1", len(execs))
	}
	if e := execs[0]; !e.Tty || !e.Stdin || !e.Stdout || e.Stderr {
		t.Errorf("exec request = %v, want tty, stdin and stdout without stderr", e)
	}
	if code, body := h.get("/attach/default/box/app?tty=1", true); code != http.StatusBadRequest || !strings.Contains(body, "at least 1 of stdin, stdout, stderr") {
		t.Errorf("attach without a stream = %d %q", code, body)
	}
}

// deadPID is the PID of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestAttachToAnExitedProcessIsRefused: the runtime still reports the container running while it
// records the exit of a process that is gone. The attach waits for the runtime to record it and is
// refused as an attach to an exited container is, so kubectl run -i prints the logs; handed to the
// runtime, it streamed nothing and succeeded (issue 32, item 7).
func TestAttachToAnExitedProcessIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	pod := h.create(makePod("box").obj())
	h.waitPod("default", "box", "running", podRunning)
	id := h.runtime.RunningContainer(string(pod.UID), "app")
	h.runtime.SetPID(id, deadPID(t))

	type response struct {
		code int
		body string
	}
	done := make(chan response, 1)
	go func() {
		r := authenticated(httptest.NewRequest(http.MethodPost, "/attach/default/box/app?output=1&error=1", nil))
		w := httptest.NewRecorder()
		h.kubelet.Handler().ServeHTTP(w, r)
		done <- response{w.Code, w.Body.String()}
	}()
	h.eventually("the attach asked for the container's process", func() bool { return len(h.runtime.CallsTo("ContainerPID")) > 0 })
	if err := h.runtime.Exit(id, 0); err != nil {
		t.Fatal(err)
	}
	var got response
	for waiting := true; waiting; {
		select {
		case got = <-done:
			waiting = false
		case <-time.After(5 * time.Millisecond):
			h.clock.Step(exitSettlePoll)
		}
	}
	if got.code != http.StatusBadRequest || !strings.Contains(got.body, "container app is not running") {
		t.Fatalf("attach to an exited process = %d %q, want 400 container app is not running", got.code, got.body)
	}
	if n := len(h.runtime.AttachRequests()); n != 0 {
		t.Fatalf("the runtime was asked for %d attaches, want none", n)
	}
}

// TestAttachToALiveProcessIsServed: a process the host still has is attached to: its output
// from the request on is streamed until it exits.
func TestAttachToALiveProcessIsServed(t *testing.T) {
	h := newHarness(t, nil)
	id, logPath := h.runningApp("box")
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	h.runtime.SetPID(id, sleeper.Process.Pid)
	h.appendLog(logPath, "stdout F started") // a history the attach does not replay
	h.clock.Step(attachReplayWindow + time.Second)
	run := h.startAttach("box", "output=1", nil, false)
	h.appendLog(logPath, "stdout F alive")
	if err := h.runtime.Exit(id, 0); err != nil {
		t.Fatal(err)
	}
	if err := h.waitAttach(run); err != nil || run.stdout.String() != "alive\n" {
		t.Fatalf("attach = %v with stdout %q, want success with %q", err, run.stdout.String(), "alive\n")
	}
}
