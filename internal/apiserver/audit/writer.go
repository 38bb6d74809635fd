package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"k8s.io/utils/clock"
)

// Writer records events.
type Writer interface {
	Write(ev *Event)
}

// FileWriter appends events as JSON lines to a file, rotating it past MaxSize bytes into
// <name>-<time><ext> backups of which it keeps MaxBackups (kube-apiserver's --audit-log-maxsize
// and --audit-log-maxbackup). A write that fails is logged, never returned: auditing must not fail
// the request it records.
type FileWriter struct {
	path       string
	maxSize    int64
	maxBackups int
	clock      clock.PassiveClock
	log        *slog.Logger

	mu   sync.Mutex
	out  io.Writer
	file *os.File
	size int64
}

// NewFileWriter opens path for appending ("-" writes to stdout without rotation).
func NewFileWriter(path string, maxSize int64, maxBackups int, clk clock.PassiveClock, log *slog.Logger) (*FileWriter, error) {
	w := &FileWriter{path: path, maxSize: maxSize, maxBackups: maxBackups, clock: clk, log: log}
	if path == "-" {
		w.out = os.Stdout
		return w, nil
	}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *FileWriter) open() error {
	if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	w.file, w.out, w.size = f, f, info.Size()
	return nil
}

// Write implements Writer.
func (w *FileWriter) Write(ev *Event) {
	line, err := json.Marshal(ev)
	if err != nil {
		w.log.Error("audit event does not encode", "auditID", ev.AuditID, "err", err)
		return
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file != nil && w.maxSize > 0 && w.size+int64(len(line)) > w.maxSize && w.size > 0 {
		if err := w.rotate(); err != nil {
			w.log.Error("audit log rotation failed", "path", w.path, "err", err)
		}
	}
	n, err := w.out.Write(line)
	w.size += int64(n)
	if err != nil {
		w.log.Error("audit log write failed", "path", w.path, "err", err)
	}
}

// rotate moves the current file aside and starts a new one, keeping maxBackups old files.
func (w *FileWriter) rotate() error {
	w.file.Close()
	ext := filepath.Ext(w.path)
	base := strings.TrimSuffix(w.path, ext)
	backup := base + "-" + w.clock.Now().UTC().Format("2006-01-02T15-04-05.000") + ext
	if err := os.Rename(w.path, backup); err != nil {
		return err
	}
	if w.maxBackups > 0 {
		old, _ := filepath.Glob(base + "-*" + ext)
		slices.Sort(old) // the timestamp sorts oldest first
		for len(old) > w.maxBackups {
			_ = os.Remove(old[0])
			old = old[1:]
		}
	}
	return w.open()
}

// Close closes the file.
func (w *FileWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return nil
	}
	return w.file.Close()
}

// Auditor decides and records the events of requests.
type Auditor struct {
	Policy *Policy
	Writer Writer
	Clock  clock.PassiveClock
}
