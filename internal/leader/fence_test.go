package leader

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fakeTerm is an elector's view: whether it holds the Lease and how long ago it last saw it.
type fakeTerm struct {
	leader bool
	age    time.Duration
	lease  time.Duration
}

func (f fakeTerm) IsLeader() bool { return f.leader }

func (f fakeTerm) Check(maxTolerableExpiredLease time.Duration) error {
	if f.leader && f.age > f.lease+maxTolerableExpiredLease {
		return errors.New("failed election to renew leadership")
	}
	return nil
}

type okTransport struct{ calls int }

func (t *okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	t.calls++
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

func TestFenceAdmitsWritesOnlyWhileTheLeaseIsConfirmed(t *testing.T) {
	cfg := &Config{Namespace: "kube-system", Name: "kube-controller-manager", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second}
	pods := "/api/v1/namespaces/default/pods"
	lease := "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
	for _, tc := range []struct {
		name   string
		term   leadership // nil: no term
		method string
		path   string
		admit  bool
		why    string
	}{
		{name: "a read with no term", method: http.MethodGet, path: pods, admit: true},
		{name: "a write with no term", method: http.MethodPost, path: pods, why: "does not lead"},
		{name: "the Lease before any term", method: http.MethodPut, path: lease, why: "does not lead"},
		{name: "a write after the term ended", term: fakeTerm{leader: true, age: time.Second, lease: 15 * time.Second}, method: http.MethodPost, path: pods, why: "does not lead"},
		{name: "a write while leading, renewed 2 s ago", term: fakeTerm{leader: true, age: 2 * time.Second, lease: 15 * time.Second}, method: http.MethodPost, path: pods, admit: true},
		{name: "a delete while leading, renewed 9 s ago", term: fakeTerm{leader: true, age: 9 * time.Second, lease: 15 * time.Second}, method: http.MethodDelete, path: pods + "/p", admit: true},
		{name: "a write after a pause: renewed 11 s ago", term: fakeTerm{leader: true, age: 11 * time.Second, lease: 15 * time.Second}, method: http.MethodPatch, path: pods + "/p", why: "last renewed over 10s ago"},
		{name: "a write after a pause longer than the Lease", term: fakeTerm{leader: true, age: 40 * time.Second, lease: 15 * time.Second}, method: http.MethodPut, path: pods + "/p", why: "last renewed over 10s ago"},
		{name: "the Lease's creation by a term not yet leading", term: fakeTerm{leader: false}, method: http.MethodPost, path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", admit: true},
		{name: "the Lease's renewal after a pause", term: fakeTerm{leader: true, age: 40 * time.Second, lease: 15 * time.Second}, method: http.MethodPut, path: lease, admit: true},
		{name: "a write while another instance holds the Lease", term: fakeTerm{leader: false}, method: http.MethodPost, path: pods, why: "another instance holds the lease"},
		{name: "a read while another instance holds the Lease", term: fakeTerm{leader: false}, method: http.MethodGet, path: pods, admit: true},
		{name: "another Lease is not exempt", term: fakeTerm{leader: false}, method: http.MethodPut, path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/other", why: "another instance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFence()
			if tc.term != nil {
				f.begin(tc.term, cfg)
			}
			if strings.Contains(tc.name, "term ended") {
				f.end()
			}
			next := &okTransport{}
			req, err := http.NewRequest(tc.method, "https://in-process"+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Wrap(next).RoundTrip(req)
			if tc.admit != (err == nil) || tc.admit != (next.calls == 1) {
				t.Fatalf("admitted %v (err %v, %d calls), want %v", err == nil, err, next.calls, tc.admit)
			}
			if !tc.admit && !strings.Contains(err.Error(), tc.why) {
				t.Errorf("error %q does not say %q", err, tc.why)
			}
		})
	}
}

// ctxTransport records the context of each request it answers, with status.
type ctxTransport struct {
	status int
	ctxs   []context.Context
}

func (t *ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.ctxs = append(t.ctxs, req.Context())
	return &http.Response{StatusCode: t.status, Body: http.NoBody}, nil
}

// A write carries a deadline of the last successful renewal's start plus the Lease duration,
// before which no other instance can take the Lease: a write held by a pause of the process past
// that moment fails in the API server instead of landing beside the next leader's.
func TestFenceBoundsWritesByTheLastRenewal(t *testing.T) {
	cfg := &Config{Namespace: "kube-system", Name: "kube-controller-manager", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second}
	lease := "https://in-process/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
	pods := "https://in-process/api/v1/namespaces/default/pods"
	send := func(f *Fence, next http.RoundTripper, method, url string) error {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := f.Wrap(next).RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	renewal := time.Now().Add(-3 * time.Second)

	f := NewFence()
	f.begin(fakeTerm{leader: true, age: 3 * time.Second, lease: 15 * time.Second}, cfg)
	next := &ctxTransport{status: http.StatusOK}
	// Before any renewal went through the fence, a write has no deadline of the fence's.
	if err := send(f, next, http.MethodPost, pods); err != nil {
		t.Fatal(err)
	}
	if _, ok := next.ctxs[0].Deadline(); ok {
		t.Error("a write before any renewal has a deadline")
	}
	f.now = func() time.Time { return renewal }
	if err := send(f, next, http.MethodPut, lease); err != nil {
		t.Fatal(err)
	}
	if _, ok := next.ctxs[1].Deadline(); ok {
		t.Error("the renewal itself has a deadline")
	}
	if err := send(f, next, http.MethodPost, pods); err != nil {
		t.Fatal(err)
	}
	if d, ok := next.ctxs[2].Deadline(); !ok || !d.Equal(renewal.Add(15*time.Second)) {
		t.Errorf("write deadline %v (%v), want the renewal's start plus 15 s, %v", d, ok, renewal.Add(15*time.Second))
	}
	if next.ctxs[2].Err() == nil {
		t.Error("the write's context is not cancelled once its response body is closed")
	}

	// A renewal the API server refused does not extend the term's writes.
	f.now = func() time.Time { return renewal.Add(2 * time.Second) }
	refused := &ctxTransport{status: http.StatusConflict}
	if err := send(f, refused, http.MethodPut, lease); err != nil {
		t.Fatal(err)
	}
	if err := send(f, next, http.MethodDelete, pods+"/p"); err != nil {
		t.Fatal(err)
	}
	if d, _ := next.ctxs[3].Deadline(); !d.Equal(renewal.Add(15 * time.Second)) {
		t.Errorf("after a refused renewal the deadline is %v, want %v", d, renewal.Add(15*time.Second))
	}

	// A write of a term whose last renewal began over a Lease duration ago is already past
	// its deadline when the API server gets it (a pause between the check and the send).
	f.now = func() time.Time { return time.Now().Add(-20 * time.Second) }
	f.begin(fakeTerm{leader: true, age: 3 * time.Second, lease: 15 * time.Second}, cfg)
	if err := send(f, next, http.MethodPut, lease); err != nil {
		t.Fatal(err)
	}
	seen := &ctxErrTransport{}
	if err := send(f, seen, http.MethodPost, pods); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(seen.err, context.DeadlineExceeded) {
		t.Errorf("the late write's context: %v, want deadline exceeded", seen.err)
	}
}

// ctxErrTransport records its request's context error as the handler would see it.
type ctxErrTransport struct{ err error }

func (t *ctxErrTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.err = req.Context().Err()
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}
