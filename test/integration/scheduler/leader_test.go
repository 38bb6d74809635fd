package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/internal/scheduler"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

// instance is a scheduler run by the test (not skiff's own) with a transport that counts the
// Bindings it posts and can be cut off, as if its process froze or its network died.
type instance struct {
	identity string
	bindings atomic.Int64
	dead     atomic.Bool
	// stopped is closed when Run returns (leadership lost or context done).
	stopped     chan struct{}
	stoppedAt   atomic.Pointer[time.Time]
	runErr      error
	cancel      context.CancelFunc
	leaseConfig leaseTimes
}

type leaseTimes struct{ duration, renew, retry time.Duration }

type countingTransport struct {
	inst *instance
	next http.RoundTripper
}

var errCutOff = errors.New("instance cut off by the test")

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.inst.dead.Load() {
		return nil, errCutOff
	}
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/binding") {
		c.inst.bindings.Add(1)
	}
	return c.next.RoundTrip(req)
}

func startInstance(t *testing.T, identity, schedulerName, leaseNamespace string, lt leaseTimes) *instance {
	t.Helper()
	inst := &instance{identity: identity, stopped: make(chan struct{}), leaseConfig: lt}
	cfg := rest.CopyConfig(shared.config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{inst: inst, next: rt} }
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := framework.ParseConfig([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: " + schedulerName + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inst.cancel = cancel
	go func() {
		defer close(inst.stopped)
		inst.runErr = scheduler.Run(ctx, scheduler.Config{
			Client: client, Configuration: conf, LeaderElect: true,
			LeaseName: "it-scheduler", LeaseNamespace: leaseNamespace,
			LeaseDuration: lt.duration, RenewDeadline: lt.renew, RetryPeriod: lt.retry,
			Identity: identity, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		now := time.Now()
		inst.stoppedAt.Store(&now)
	}()
	t.Cleanup(func() {
		cancel()
		<-inst.stopped
	})
	return inst
}

// TestLeaderElection: two scheduler instances share one Lease; only the holder binds; when the
// holder is cut off (no clean release), it stops scheduling once it cannot renew, and the
// standby takes over within the lease duration (plus its retry period) and binds what follows.
func TestLeaderElection(t *testing.T) {
	e := newEnv(t)
	const name = "it-leader"
	lt := leaseTimes{duration: 4 * time.Second, renew: 3 * time.Second, retry: 500 * time.Millisecond}
	e.createNodes(node("le-node").Capacity(st.Res{v1.ResourcePods: "200"}).Obj())

	a := startInstance(t, "sched-a", name, e.ns, lt)
	e.eventually("sched-a leads", 30*time.Second, func() error {
		if h := e.leaseHolder(e.ns, "it-scheduler"); h != "sched-a" {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	b := startInstance(t, "sched-b", name, e.ns, lt)

	createBatch := func(prefix string, n int) {
		for i := range n {
			e.createPod(pod(fmt.Sprintf("%s-%d", prefix, i)).SchedulerName(name).Req(st.Res{v1.ResourceCPU: "10m"}).Obj())
		}
		for i := range n {
			if got := e.waitBound(fmt.Sprintf("%s-%d", prefix, i)); got != "le-node" {
				t.Fatalf("bound to %s", got)
			}
		}
	}
	// sched-b has had time to sync and campaign: it must stay standby.
	time.Sleep(2 * lt.retry)
	createBatch("first", 10)
	if got, standby := a.bindings.Load(), b.bindings.Load(); got != 10 || standby != 0 {
		t.Fatalf("bindings: leader %d, standby %d; want 10 and 0", got, standby)
	}

	cutAt := time.Now()
	a.dead.Store(true)
	var tookOver time.Time
	e.eventually("sched-b takes over", 3*lt.duration, func() error {
		if h := e.leaseHolder(e.ns, "it-scheduler"); h != "sched-b" {
			return fmt.Errorf("holder %q", h)
		}
		tookOver = time.Now()
		return nil
	})
	takeover := tookOver.Sub(cutAt)
	t.Logf("standby took over %s after the leader was cut off (lease %s, renew deadline %s, retry %s)", takeover, lt.duration, lt.renew, lt.retry)
	// client-go's elector acquires an expired lease on its next retry (jittered by up to 1.2x).
	if limit := lt.duration + lt.retry*22/10 + 500*time.Millisecond; takeover > limit {
		t.Errorf("takeover took %s, more than lease duration + retry period (%s)", takeover, limit)
	}
	select {
	case <-a.stopped:
	case <-time.After(lt.duration):
		t.Fatal("the cut-off leader is still running")
	}
	if !errors.Is(a.runErr, scheduler.ErrLeadershipLost) {
		t.Errorf("cut-off leader's Run returned %v, want ErrLeadershipLost", a.runErr)
	}
	if stopped := *a.stoppedAt.Load(); stopped.After(tookOver) {
		t.Errorf("old leader stopped at %s, after the standby took over at %s", stopped.Format(time.StampMilli), tookOver.Format(time.StampMilli))
	}
	createBatch("second", 10)
	if got, old := b.bindings.Load(), a.bindings.Load(); got != 10 || old != 10 {
		t.Fatalf("bindings after takeover: new leader %d, old leader %d; want 10 and 10", got, old)
	}

	// A clean stop releases the Lease: a standby takes over on its next retry, well within the
	// lease duration.
	c := startInstance(t, "sched-c", name, e.ns, lt)
	time.Sleep(2 * lt.retry)
	stopAt := time.Now()
	b.cancel()
	<-b.stopped
	e.eventually("sched-c takes over", 3*lt.duration, func() error {
		if h := e.leaseHolder(e.ns, "it-scheduler"); h != "sched-c" {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	if took := time.Since(stopAt); took >= lt.duration {
		t.Errorf("after a clean stop the standby took over in %s, not within the lease duration %s", took, lt.duration)
	} else {
		t.Logf("standby took over %s after a clean stop", took)
	}
	createBatch("third", 10)
	if got, prev := c.bindings.Load(), b.bindings.Load(); got != 10 || prev != 10 {
		t.Fatalf("bindings after clean handover: new leader %d, previous %d; want 10 and 10", got, prev)
	}
}

// leaseHolder returns the holder of a Lease, or "" while nobody holds it.
func (e *env) leaseHolder(ns, name string) string {
	l, err := e.client.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
