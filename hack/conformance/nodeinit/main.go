// Command nodeinit runs one node of hack/conformance.sh in a PID and mount namespace of its own,
// as a node's processes live on a machine of their own:
//
//	nodeinit [--hostname NAME] -- COMMAND [ARG...]
//
// Why: e2e.test's storage specs reach "the node" with a privileged hostPID pod that enters the
// node's mount namespace through /rootfs/proc/1/ns/mnt (test/e2e/storage/utils/host_exec.go): on
// a real node, PID 1 is the node's init and its mount namespace the node's. Nodes sharing this
// machine would all enter the machine's init, which the host refuses even to root, and would all
// share one mount table. In a PID namespace of its own, /proc/1 is this program's inner half,
// whose mount namespace is the node's. With --hostname the node also gets a UTS namespace whose
// hostname is NAME (the node's name): a hostNetwork pod shares its node's UTS namespace, and
// specs expect its hostname to be the node's name, as it is where the kubelet takes the name from
// the machine's hostname.
//
// The outer process (the one the harness starts and signals) makes the namespaces by starting
// its own executable again with CLONE_NEWPID|CLONE_NEWNS; that inner process is PID 1 there. It
// makes every mount private (nothing a node mounts reaches the host or another node), mounts a
// /proc of the new PID namespace, starts COMMAND, forwards SIGINT and SIGTERM to it, reaps every
// orphan reparented to it (containerd's shims are daemonized), and exits with COMMAND's status.
// When it exits the kernel ends whatever the node left running. A SIGKILL of the outer process
// kills the inner one too (its parent-death signal).
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
)

// innerEnv marks the re-executed process, PID 1 of the node's namespaces.
const innerEnv = "SKIFF_NODEINIT_INNER"

func main() {
	hostname, args, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodeinit: %v\nusage: nodeinit [--hostname NAME] -- COMMAND [ARG...]\n", err)
		os.Exit(2)
	}
	var code int
	if os.Getenv(innerEnv) == "1" {
		code, err = inner(hostname, args)
	} else {
		code, err = outer(hostname, args)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodeinit: %v\n", err)
		os.Exit(125)
	}
	os.Exit(code)
}

// parseArgs splits [--hostname NAME] -- COMMAND [ARG...].
func parseArgs(args []string) (hostname string, command []string, err error) {
	if len(args) >= 2 && args[0] == "--hostname" {
		hostname, args = args[1], args[2:]
		if hostname == "" {
			return "", nil, errors.New("--hostname is empty")
		}
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return "", nil, errors.New("no command")
	}
	return hostname, args, nil
}

// outer starts the inner half in new PID and mount namespaces and waits for it, forwarding the
// signals the harness stops a node with.
func outer(hostname string, args []string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("own executable: %w", err)
	}
	env := append(os.Environ(), innerEnv+"=1")
	flags := uintptr(syscall.CLONE_NEWPID | syscall.CLONE_NEWNS)
	innerArgs := []string{self}
	if hostname != "" {
		flags |= syscall.CLONE_NEWUTS
		innerArgs = append(innerArgs, "--hostname", hostname)
	}
	attr := &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Cloneflags: flags, Pdeathsig: syscall.SIGKILL},
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	proc, err := os.StartProcess(self, append(append(innerArgs, "--"), args...), attr)
	if err != nil {
		return 0, fmt.Errorf("start the node's namespaces: %w", err)
	}
	go forward(signals, proc)
	state, err := proc.Wait()
	if err != nil {
		return 0, fmt.Errorf("wait for the node: %w", err)
	}
	return exitCode(state.Sys().(syscall.WaitStatus)), nil
}

// inner is PID 1 of the node: its hostname, private mounts, its own /proc, COMMAND as its child,
// every orphan reaped.
func inner(hostname string, args []string) (int, error) {
	if hostname != "" {
		if err := syscall.Sethostname([]byte(hostname)); err != nil {
			return 0, fmt.Errorf("the node's hostname: %w", err)
		}
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return 0, fmt.Errorf("make the node's mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return 0, fmt.Errorf("mount the node's /proc: %w", err)
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, innerEnv+"=") {
			env = append(env, kv)
		}
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return 0, fmt.Errorf("the node's command: %w", err)
	}
	proc, err := os.StartProcess(path, args, &os.ProcAttr{Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", args[0], err)
	}
	go forward(signals, proc)
	return reapUntil(proc.Pid)
}

// reapUntil waits for every child, its own and the orphans given to PID 1, until main exits.
// os.Process.Wait is not used: a wait for any child would race with it.
func reapUntil(main int) (int, error) {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, fmt.Errorf("wait: %w", err)
		case pid == main:
			return exitCode(status), nil
		}
	}
}

func forward(signals <-chan os.Signal, proc *os.Process) {
	for sig := range signals {
		_ = proc.Signal(sig) // it may have exited already
	}
}

// exitCode is a shell's view of a status: the code, or 128 plus the signal that ended it.
func exitCode(status syscall.WaitStatus) int {
	if status.Signaled() {
		return 128 + int(status.Signal())
	}
	return status.ExitStatus()
}
