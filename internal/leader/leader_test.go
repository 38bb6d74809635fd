package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func TestNext(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name      string
		policy    Policy
		term      term
		wantAgain bool
		wantErr   error
	}{
		{name: "stopped", policy: ReturnOnLoss, term: term{stopped: true}},
		{name: "stopped while losing", policy: CampaignAgain, term: term{stopped: true, lost: true}},
		{name: "lost, return", policy: ReturnOnLoss, term: term{lost: true}, wantErr: ErrLost},
		{name: "lost, campaign again", policy: CampaignAgain, term: term{lost: true}, wantAgain: true},
		{name: "lead failed", policy: CampaignAgain, term: term{lost: true, leadErr: boom}, wantErr: boom},
		{name: "lead failed at the stop", policy: ReturnOnLoss, term: term{stopped: true, leadErr: boom}, wantErr: boom},
		{name: "lead done by itself", policy: CampaignAgain, term: term{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			again, err := next(c.policy, c.term)
			if again != c.wantAgain || !errors.Is(err, c.wantErr) || (err == nil) != (c.wantErr == nil) {
				t.Errorf("next = %v, %v; want %v, %v", again, err, c.wantAgain, c.wantErr)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	client := fake.NewClientset()
	ok := Config{Client: client, Name: "l", Identity: "a"}
	cases := []struct {
		name    string
		mutate  func(*Config)
		wantErr bool
	}{
		{name: "defaults", mutate: func(*Config) {}},
		{name: "no client", mutate: func(c *Config) { c.Client = nil }, wantErr: true},
		{name: "no name", mutate: func(c *Config) { c.Name = "" }, wantErr: true},
		{name: "no identity", mutate: func(c *Config) { c.Identity = "" }, wantErr: true},
		{name: "lease not above renew", mutate: func(c *Config) { c.LeaseDuration = 10 * time.Second }, wantErr: true},
		{name: "renew within the jittered retry", mutate: func(c *Config) { c.RetryPeriod = 9 * time.Second }, wantErr: true},
		{name: "unknown policy", mutate: func(c *Config) { c.Policy = 7 }, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.mutate(&cfg)
			cfg.Default()
			if err := cfg.Validate(); (err != nil) != c.wantErr {
				t.Errorf("Validate = %v, want error %v", err, c.wantErr)
			}
		})
	}
	if err := Campaign(t.Context(), Config{Client: client, Identity: "a"}, func(context.Context) error { return nil }); err == nil {
		t.Error("Campaign without a Lease name returned nil")
	}
}

// candidate is one Campaign in a test: its lead records the term and, once its context ends,
// waits for the test to let it return.
type candidate struct {
	id     string
	cancel context.CancelFunc
	// leading is sent a term number when lead starts; ended when lead's context ends.
	leading, ended chan int
	// finish lets a term's lead return.
	finish chan struct{}
	terms  atomic.Int32
	done   chan struct{}
	err    error
}

// arena runs candidates for one Lease on one fake clientset, and counts leads running at once.
type arena struct {
	t      *testing.T
	client *fake.Clientset
	cfg    Config
	wg     sync.WaitGroup
	active atomic.Int32
	// cut: the identity whose Lease writes fail, as if it were cut off from the API.
	cut atomic.Pointer[string]
	// exclusive: fail if two leads run at once. Only a release guarantees that; after a loss it
	// rests on timing (the old leader stops within RenewDeadline, the Lease expires after
	// LeaseDuration, seen at the record's one-second precision), which load can stretch.
	exclusive bool
}

func newArena(t *testing.T, lease, renew, retry time.Duration, policy Policy) *arena {
	a := &arena{t: t, client: fake.NewClientset(), exclusive: true}
	a.cfg = Config{Client: a.client, Name: "test-lease", LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, Policy: policy,
		Logger: slog.New(slog.DiscardHandler)}
	a.client.PrependReactor("*", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		cut := a.cut.Load()
		if cut == nil {
			return false, nil, nil
		}
		// Creates and updates carry the Lease written, with its holder.
		write, ok := action.(interface{ GetObject() runtime.Object })
		if !ok {
			return false, nil, nil
		}
		if l, ok := write.GetObject().(*coordinationv1.Lease); ok && ptr.Deref(l.Spec.HolderIdentity, "") == *cut {
			return true, nil, errors.New("cut off from the API")
		}
		return false, nil, nil
	})
	t.Cleanup(a.wg.Wait)
	return a
}

func (a *arena) start(id string) *candidate {
	ctx, cancel := context.WithCancel(a.t.Context())
	c := &candidate{id: id, cancel: cancel, leading: make(chan int, 16), ended: make(chan int, 16), finish: make(chan struct{}, 16), done: make(chan struct{})}
	cfg := a.cfg
	cfg.Identity = id
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(c.done)
		c.err = Campaign(ctx, cfg, func(ctx context.Context) error {
			n := int(c.terms.Add(1))
			if a.active.Add(1) > 1 && a.exclusive {
				a.t.Errorf("%s leads while another lead still runs", id)
			}
			c.leading <- n
			<-ctx.Done()
			c.ended <- n
			<-c.finish
			a.active.Add(-1)
			return nil
		})
	}()
	a.t.Cleanup(func() {
		cancel()
		close(c.finish)
	})
	return c
}

func (a *arena) holder() string {
	l, err := a.client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), "test-lease", metav1.GetOptions{})
	if err != nil {
		a.t.Fatalf("get lease: %v", err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// first waits until one of cs leads and returns it and the other.
func first(t *testing.T, x, y *candidate) (leader, other *candidate) {
	t.Helper()
	select {
	case <-x.leading:
		return x, y
	case <-y.leading:
		return y, x
	case <-time.After(30 * time.Second):
		t.Fatal("no candidate became leader")
	}
	return nil, nil
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting: %s", what)
	}
	var zero T
	return zero
}

func returned(c *candidate) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// TestStopWhileLeadingWaitsThenReleases: two candidates, one leads; stopping it waits for its
// lead, and the Lease is released (so the other leads) only after that lead has returned.
func TestStopWhileLeadingWaitsThenReleases(t *testing.T) {
	// A Lease long enough that only a release hands it over within the test.
	a := newArena(t, time.Minute, 30*time.Second, 50*time.Millisecond, ReturnOnLoss)
	x, y := first(t, a.start("a"), a.start("b"))
	if h := a.holder(); h != x.id {
		t.Fatalf("%s leads but the Lease is held by %q", x.id, h)
	}
	x.cancel()
	wait(t, x.ended, "the stopped leader's context to end")
	if returned(x) {
		t.Fatal("Campaign returned while its lead still ran")
	}
	if h := a.holder(); h != x.id {
		t.Fatalf("the Lease went to %q while %s's lead still ran", h, x.id)
	}
	x.finish <- struct{}{}
	wait(t, x.done, "the stopped leader's Campaign to return")
	if x.err != nil {
		t.Errorf("stopped Campaign returned %v, want nil", x.err)
	}
	// The other candidate takes the released Lease.
	wait(t, y.leading, "the other candidate to lead after the release")
	if h := a.holder(); h != y.id {
		t.Errorf("%s leads but the Lease is held by %q", y.id, h)
	}
	y.cancel()
	wait(t, y.ended, "the second leader's context to end")
	y.finish <- struct{}{}
	wait(t, y.done, "the second Campaign to return")
	if h := a.holder(); h != "" {
		t.Errorf("the Lease is held by %q after every candidate stopped, want it released", h)
	}
}

// TestLossEndsTheTerm: a leader cut off from the API loses the Lease: its lead's context ends,
// Campaign waits for the lead, then returns ErrLost or campaigns again by policy.
func TestLossEndsTheTerm(t *testing.T) {
	for _, policy := range []Policy{ReturnOnLoss, CampaignAgain} {
		name := map[Policy]string{ReturnOnLoss: "return", CampaignAgain: "campaign again"}[policy]
		t.Run(name, func(t *testing.T) {
			// The Lease outlives the renew deadline by more than the record's one-second precision.
			a := newArena(t, 3*time.Second, time.Second, 50*time.Millisecond, policy)
			a.exclusive = false
			x, y := first(t, a.start("a"), a.start("b"))
			a.cut.Store(&x.id)
			term := wait(t, x.ended, "the cut-off leader's context to end")
			if returned(x) {
				t.Fatal("Campaign returned while its lead still ran")
			}
			x.finish <- struct{}{}
			// The other candidate takes the Lease once it expires.
			wait(t, y.leading, "the other candidate to lead")
			if policy == ReturnOnLoss {
				wait(t, x.done, "the cut-off leader's Campaign to return")
				if !errors.Is(x.err, ErrLost) {
					t.Errorf("Campaign returned %v, want ErrLost", x.err)
				}
				return
			}
			if returned(x) {
				t.Fatalf("Campaign returned %v under CampaignAgain", x.err)
			}
			// Back on the API, it leads again once the other stops.
			a.cut.Store(nil)
			y.cancel()
			wait(t, y.ended, "the second leader's context to end")
			y.finish <- struct{}{}
			if again := wait(t, x.leading, "the first candidate to lead again"); again <= term {
				t.Errorf("term %d after term %d", again, term)
			}
			x.cancel()
			wait(t, x.ended, "the first candidate's context to end")
			x.finish <- struct{}{}
			wait(t, x.done, "Campaign to return")
			if x.err != nil {
				t.Errorf("stopped Campaign returned %v, want nil", x.err)
			}
		})
	}
}

// TestStopBeforeLeading: a candidate that never gets the Lease returns at the stop and never leads.
func TestStopBeforeLeading(t *testing.T) {
	a := newArena(t, time.Minute, 30*time.Second, 50*time.Millisecond, ReturnOnLoss)
	now := metav1.NowMicro()
	if _, err := a.client.CoordinationV1().Leases(metav1.NamespaceSystem).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "test-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("elsewhere"), LeaseDurationSeconds: ptr.To[int32](60),
			AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	x := a.start("a")
	x.cancel()
	wait(t, x.done, "Campaign to return")
	if x.err != nil || x.terms.Load() != 0 {
		t.Errorf("Campaign = %v after %d terms, want nil after none", x.err, x.terms.Load())
	}
	if h := a.holder(); h != "elsewhere" {
		t.Errorf("the Lease is held by %q, want it untouched", h)
	}
}

// TestLeadErrorEndsCampaign: lead's own error is Campaign's, and the Lease is released.
func TestLeadErrorEndsCampaign(t *testing.T) {
	a := newArena(t, time.Minute, 30*time.Second, 50*time.Millisecond, CampaignAgain)
	boom := errors.New("boom")
	err := Campaign(t.Context(), Config{Client: a.client, Name: "test-lease", Identity: "a", LeaseDuration: time.Minute, RenewDeadline: 30 * time.Second,
		RetryPeriod: 50 * time.Millisecond, Policy: CampaignAgain}, func(context.Context) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Campaign = %v, want %v", err, boom)
	}
	if h := a.holder(); h != "" {
		t.Errorf("the Lease is held by %q after Campaign returned, want it released", h)
	}
}
