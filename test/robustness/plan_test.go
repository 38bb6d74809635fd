package robustness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestSchedule(t *testing.T) {
	for _, tc := range []ScheduleConfig{
		{Kind: FaultPause, Nodes: 3, Duration: 5 * time.Minute, Warmup: 3 * time.Second, Cooldown: 3 * time.Second, Gap: 4 * time.Second, PauseMin: 5 * time.Second, PauseMax: 30 * time.Second, Seed: 1},
		{Kind: FaultKill, Nodes: 1, Duration: 20 * time.Second, Warmup: 3 * time.Second, Cooldown: 3 * time.Second, Gap: 4 * time.Second, Seed: 2},
		{Kind: FaultCompact, Nodes: 1, Duration: 20 * time.Second, Warmup: 3 * time.Second, Cooldown: 3 * time.Second, Gap: 4 * time.Second, Seed: 3},
	} {
		t.Run(string(tc.Kind), func(t *testing.T) {
			faults := Schedule(tc)
			if len(faults) == 0 {
				t.Fatal("no fault planned")
			}
			if again := Schedule(tc); fmt.Sprint(again) != fmt.Sprint(faults) {
				t.Fatalf("the same seed planned %v, then %v", faults, again)
			}
			end := tc.Warmup - tc.Gap
			for _, f := range faults {
				if f.At < end+tc.Gap {
					t.Errorf("%v starts %s after the previous fault ended, want at least %s", f, f.At-end, tc.Gap)
				}
				if f.At+f.Length > tc.Duration-tc.Cooldown {
					t.Errorf("%v runs into the cooldown", f)
				}
				if f.Node < 0 || f.Node >= tc.Nodes {
					t.Errorf("%v targets no node", f)
				}
				if tc.Kind == FaultPause && (f.Length < tc.PauseMin || f.Length > tc.PauseMax) {
					t.Errorf("pause of %s outside [%s, %s]", f.Length, tc.PauseMin, tc.PauseMax)
				}
				end = f.At + f.Length
			}
		})
	}
}

func TestPlan(t *testing.T) {
	k := known{"seen": 42}
	for _, tc := range []struct {
		draw   float64
		key    string
		seenRV int64
		want   choice
	}{
		{0.1, "seen", 50, choice{Kind: OpGet, Key: "seen"}},
		{0.25, "seen", 50, choice{Kind: OpGetCached, Key: "seen"}},
		{0.4, "seen", 50, choice{Kind: OpUpdate, Key: "seen", Precondition: 42}},
		{0.4, "new", 50, choice{Kind: OpCreate, Key: "new"}},
		{0.6, "seen", 50, choice{Kind: OpApply, Key: "seen"}},
		{0.65, "seen", 50, choice{Kind: OpDelete, Key: "seen", Precondition: 42}},
		{0.7, "seen", 50, choice{Kind: OpCreate, Key: "seen"}},
		{0.75, "seen", 50, choice{List: true}},
		{0.82, "seen", 50, choice{List: true, RV: "0"}},
		{0.87, "seen", 50, choice{List: true, RV: "50", Match: "Exact"}},
		{0.92, "seen", 50, choice{List: true, RV: "50", Match: "NotOlderThan"}},
		{0.87, "seen", 0, choice{List: true, Limit: 2}},
		{0.99, "seen", 50, choice{List: true, Limit: 2}},
	} {
		if got := plan(tc.draw, tc.key, k, tc.seenRV); got != tc.want {
			t.Errorf("plan(%v, %s, seen %d) = %+v, want %+v", tc.draw, tc.key, tc.seenRV, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		err    error
		want   Outcome
		reason string
	}{
		{apierrors.NewConflict(gr, "k", errors.New("stale")), OutcomeFailed, "Conflict"},
		{apierrors.NewAlreadyExists(gr, "k"), OutcomeFailed, "AlreadyExists"},
		{apierrors.NewTooManyRequests("busy", 1), OutcomeFailed, "TooManyRequests"},
		{apierrors.NewInternalError(errors.New("etcdserver: request timed out")), OutcomeUnknown, "InternalError"},
		{apierrors.NewServiceUnavailable("no quorum"), OutcomeUnknown, "ServiceUnavailable"},
		{fmt.Errorf("post: %w", syscall.ECONNREFUSED), OutcomeFailed, "connection refused"},
		{context.DeadlineExceeded, OutcomeUnknown, "context deadline exceeded"},
		{io.ErrUnexpectedEOF, OutcomeUnknown, "unexpected EOF"},
	} {
		got, reason := classify(tc.err)
		if got != tc.want || reason != tc.reason {
			t.Errorf("classify(%v) = %s %q, want %s %q", tc.err, got, reason, tc.want, tc.reason)
		}
	}
}

// TestClientRecordsOutcomes runs the recorder against a loopback server answering as an API
// server would: a created object's resourceVersion, a Conflict, a 504 (unknown: the write may
// have happened), and checks no call is retried.
func TestClientRecordsOutcomes(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"k","resourceVersion":"17"},"data":{"v":"c0-1"}}`)
		case r.Method == http.MethodPut:
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"Conflict","code":409}`)
		case r.Method == http.MethodPatch:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusGatewayTimeout)
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"Timeout","code":504}`)
		case strings.Contains(r.URL.RawQuery, "resourceVersion=0"):
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"k","resourceVersion":"17"},"data":{"v":"c0-1"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	log := NewLog("unit", clk)
	c := NewClient(0, cs.CoreV1().RESTClient(), "ns", log)
	ctx := context.Background()
	got := []Op{
		c.Create(ctx, "k", "c0-1"),
		c.Update(ctx, "k", "c0-2", 17),
		c.Apply(ctx, "k", "c0-3"),
		c.Get(ctx, "k", true),
		c.Get(ctx, "k", false),
	}
	want := []string{
		"c0 create k v=c0-1 -> ok rv=17",
		"c0 update k v=c0-2 if-rv=17 -> failed (Conflict)",
		"c0 apply k v=c0-3 -> unknown (Timeout)",
		"c0 get-rv0 k -> ok c0-1@17",
		"c0 get k -> ok not found",
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("call %d recorded %q, want %q", i, got[i], want[i])
		}
	}
	if calls != len(want) {
		t.Errorf("the server saw %d calls for %d made: the recorder retried", calls, len(want))
	}
	if h := log.History(0, nil, nil); len(h.Ops) != len(want) {
		t.Errorf("history holds %d calls, want %d", len(h.Ops), len(want))
	}
}
