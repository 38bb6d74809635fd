package robustness

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is a child the suite starts, kills, stops, pauses and resumes (a node, the external
// etcd): its output appended to a log file, the goroutine that waits for it joined by kill and
// stop.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs cmd with its output appended to logPath.
func (p *process) start(cmd *exec.Cmd, logPath string) error {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("%s log: %w", p.name, err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	done := p.done
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	return nil
}

// running says whether the process is up.
func (p *process) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL, as a crash would, and waits for the process.
func (p *process) kill() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused process dies on SIGKILL too, but be sure
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop interrupts the process, killing it after ten seconds.
func (p *process) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) signal(s syscall.Signal) error {
	if !p.running() {
		return fmt.Errorf("%s is not running", p.name)
	}
	if err := p.cmd.Process.Signal(s); err != nil {
		return fmt.Errorf("signal %s to %s: %w", s, p.name, err)
	}
	return nil
}
