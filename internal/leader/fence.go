package leader

import (
	"context"
	"fmt"
	"io"
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
// elector renews with the same client).
//
// A write already past that check when the process stops is bounded too: it carries a context
// deadline of the last successful renewal's start plus LeaseDuration, before which no other
// instance can take the Lease. The in-process clients hand that context to their API server's
// handler, whose storage write then fails instead of landing after the pause (the workers-pause
// scenario caught a pod create that passed the check, was held by a 28 s pause of the whole
// process, and landed 1 s after it resumed, beside the pods the next leader had made meanwhile).
//
// Campaign sets the term's elector (Config.Fence); the component wraps its clients' transport
// with Wrap.
type Fence struct {
	mu            sync.Mutex
	term          leadership
	leasePath     string // the Lease; its collection, for the elector's create
	leaseDuration time.Duration
	renewDeadline time.Duration
	// renewedAt is when the last write of the Lease that succeeded was sent: the elector's
	// acquisition or renewal (zero: none seen yet).
	renewedAt time.Time
	// now is the clock of renewedAt and of the writes' deadlines (context deadlines are the
	// wall clock's).
	now func() time.Time
}

// leadership is what a Fence asks of client-go's elector.
type leadership interface {
	IsLeader() bool
	// Check fails when the last observation of the Lease is older than LeaseDuration plus
	// the given duration.
	Check(maxTolerableExpiredLease time.Duration) error
}

// NewFence is a fence with no term: every write is held back until Campaign starts one.
func NewFence() *Fence { return &Fence{now: time.Now} }

// begin starts a term under cfg's Lease.
func (f *Fence) begin(term leadership, cfg *Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.term = term
	// A term's writes are bounded by its own renewals only.
	f.renewedAt = time.Time{}
	f.leasePath = "/apis/coordination.k8s.io/v1/namespaces/" + cfg.Namespace + "/leases/" + cfg.Name
	f.leaseDuration, f.renewDeadline = cfg.LeaseDuration, cfg.RenewDeadline
}

// end ends the term: writes are held back again.
func (f *Fence) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.term = nil
}

// fenceDecision is what the fence does with a request.
type fenceDecision struct {
	// err holds the request back.
	err error
	// lease: the request is the Lease's own; its success is a renewal.
	lease bool
	// deadline, when set, bounds an admitted write.
	deadline time.Time
}

// admit says whether req may go out, and why not.
func (f *Fence) admit(req *http.Request) fenceDecision {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return fenceDecision{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.admitWrite(req); err != nil {
		return fenceDecision{err: err}
	}
	if f.isLease(req) {
		return fenceDecision{lease: true}
	}
	if f.renewedAt.IsZero() {
		return fenceDecision{}
	}
	return fenceDecision{deadline: f.renewedAt.Add(f.leaseDuration)}
}

// isLease says whether req writes the Lease itself.
func (f *Fence) isLease(req *http.Request) bool {
	switch {
	case f.leasePath != "" && req.URL.Path == f.leasePath:
		return true
	case f.leasePath != "" && req.Method == http.MethodPost && req.URL.Path == path.Dir(f.leasePath):
		// The elector creates the Lease when there is none.
		return true
	}
	return false
}

// renewed records a write of the Lease, sent at sent, that succeeded.
func (f *Fence) renewed(sent time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sent.After(f.renewedAt) {
		f.renewedAt = sent
	}
}

// admitWrite says why a write may not go out (nil: it may). f.mu is held.
func (f *Fence) admitWrite(req *http.Request) error {
	switch {
	case f.isLease(req):
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
	d := t.fence.admit(req)
	switch {
	case d.err != nil:
		closeRequestBody(req)
		return nil, d.err
	case d.lease:
		sent := t.fence.now()
		resp, err := t.next.RoundTrip(req)
		if err == nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
			t.fence.renewed(sent)
		}
		return resp, err
	case d.deadline.IsZero():
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithDeadline(req.Context(), d.deadline)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	// The body is read after RoundTrip returns: the deadline's timer goes when it is closed.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// closeRequestBody closes the body of a request that is not sent, as a RoundTripper must.
func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// cancelOnClose is a response body that cancels its request's context once closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
