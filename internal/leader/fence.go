package leader

import (
	"fmt"
	"net/http"
	"path"
	"sync"
	"time"
)

// Fence holds back the writes of a component whose leadership may have lapsed. client-go's
// elector ends a term only when a renewal fails, and a process stopped for longer than the
// Lease (SIGSTOP, a stalled VM, a long GC) learns of it only after it runs again: until then its
// controllers act on a cache that stopped when the process did, while another instance leads.
// The robustness suite's ha-pause scenario caught exactly that: ReplicaSets with more pods than
// their replicas, each 0.1-3 s after a paused control plane resumed.
//
// A Fence lets a write (any method but GET, HEAD and OPTIONS) through only while this instance
// holds the Lease by its last observation and that observation is at most RenewDeadline old: the
// time after which the elector gives the term up itself, and LeaseDuration minus RenewDeadline
// before another instance may take the Lease. The Lease's own requests always go through (the
// elector renews with the same client). What it cannot stop is a write already past the check
// when the process stops.
//
// Campaign sets the term's elector (Config.Fence); the component wraps its clients' transport
// with Wrap.
type Fence struct {
	mu            sync.Mutex
	term          leadership
	leasePath     string // the Lease; its collection, for the elector's create
	leaseDuration time.Duration
	renewDeadline time.Duration
}

// leadership is what a Fence asks of client-go's elector.
type leadership interface {
	IsLeader() bool
	// Check fails when the last observation of the Lease is older than LeaseDuration plus
	// the given duration.
	Check(maxTolerableExpiredLease time.Duration) error
}

// NewFence is a fence with no term: every write is held back until Campaign starts one.
func NewFence() *Fence { return &Fence{} }

// begin starts a term under cfg's Lease.
func (f *Fence) begin(term leadership, cfg *Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.term = term
	f.leasePath = "/apis/coordination.k8s.io/v1/namespaces/" + cfg.Namespace + "/leases/" + cfg.Name
	f.leaseDuration, f.renewDeadline = cfg.LeaseDuration, cfg.RenewDeadline
}

// end ends the term: writes are held back again.
func (f *Fence) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.term = nil
}

// admit says whether req may go out, and why not.
func (f *Fence) admit(req *http.Request) error {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.leasePath != "" && req.URL.Path == f.leasePath:
		return nil
	case f.leasePath != "" && req.Method == http.MethodPost && req.URL.Path == path.Dir(f.leasePath):
		// The elector creates the Lease when there is none.
		return nil
	case f.term == nil:
		return fmt.Errorf("%s %s held back: this instance does not lead", req.Method, req.URL.Path)
	case !f.term.IsLeader():
		return fmt.Errorf("%s %s held back: another instance holds the lease", req.Method, req.URL.Path)
	}
	if err := f.term.Check(f.renewDeadline - f.leaseDuration); err != nil {
		return fmt.Errorf("%s %s held back: the lease was last renewed over %s ago: %w", req.Method, req.URL.Path, f.renewDeadline, err)
	}
	return nil
}

// Wrap is a rest.Config's WrapTransport: requests go through rt once the fence admits them.
func (f *Fence) Wrap(rt http.RoundTripper) http.RoundTripper {
	return fencedTransport{fence: f, next: rt}
}

type fencedTransport struct {
	fence *Fence
	next  http.RoundTripper
}

func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.fence.admit(req); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(req)
}
