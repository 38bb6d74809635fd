package etcdtest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/skiff-sh/skiff/internal/etcd"
)

// Shared is one embedded member for a whole test package: tests isolate themselves by key
// prefix instead of each paying for a member. It starts when the first test asks for it, not in
// TestMain before m.Run: under `go test -json` testing.M.Run replaces os.Stderr, and the
// member's serving goroutines read it (a logger's default output), a data race the race
// detector reports against the whole package. Close it after m.Run.
type Shared struct {
	// Name prefixes the member's temporary data dir.
	Name string

	once   sync.Once
	dir    string
	member *etcd.Member
	stop   func()
	err    error
}

// Member starts the member on first use and returns it; a failed start fails every test that
// asks.
func (s *Shared) Member(t testing.TB) *etcd.Member {
	t.Helper()
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", s.Name+"-"); s.err != nil {
			return
		}
		s.member, s.stop, s.err = StartEmbeddedInDir(s.dir, Options{})
	})
	if s.err != nil {
		t.Fatalf("start the package's shared etcd member: %v", s.err)
	}
	return s.member
}

// Close stops the member, if one was started, and removes its data dir.
func (s *Shared) Close() {
	if s.stop != nil {
		s.stop()
	}
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			fmt.Fprintf(os.Stderr, "remove %s: %v\n", s.dir, err)
		}
	}
}
