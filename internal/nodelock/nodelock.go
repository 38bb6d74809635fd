package nodelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// FileName is the lock a running node holds in its data dir.
const FileName = "skiff.lock"

// Lock is an exclusive flock on <data-dir>/skiff.lock, held for the node's lifetime, so a
// second skiff on the same data dir exits at once instead of waiting on etcd's own lock forever and
// rewriting the first node's files meanwhile. The kernel drops the lock when the process dies, so a
// kill -9 leaves nothing to clean up.
type Lock struct {
	f *os.File
}

// Acquire takes the lock on dir or says which process holds it. It writes nothing else: a refused
// node changes nothing in the data dir.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if data, readErr := os.ReadFile(path); readErr == nil {
				if pid, convErr := strconv.Atoi(strings.TrimSpace(string(data))); convErr == nil {
					holder = fmt.Sprintf("skiff (pid %d)", pid)
				}
			}
			return nil, fmt.Errorf("data dir %s is in use by %s: stop it first, or give this node another --data-dir", dir, holder)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write data dir lock: %w", err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write data dir lock: %w", err)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock; the file stays (removing it would race with a node taking it).
func (l *Lock) Release() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
