package leader

import (
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
