package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLost is returned (wrapped with the Lease's name) by Campaign under ReturnOnLoss when the Lease
// was lost while leading and the caller's context was still live.
var ErrLost = errors.New("leader election lost")

// Policy says what Campaign does after losing the Lease.
type Policy int

const (
	// ReturnOnLoss returns ErrLost, as kube-controller-manager and kube-scheduler exit: the caller
	// rebuilds what it owns before it campaigns again.
	ReturnOnLoss Policy = iota
	// CampaignAgain campaigns for the Lease again, for work that keeps no state across terms.
	CampaignAgain
)

// Defaults of the Lease's timing: kube-controller-manager's and kube-scheduler's.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config configures Campaign.
type Config struct {
	// Client holds the Lease.
	Client kubernetes.Interface
	// Namespace and Name name the Lease (Namespace defaults to kube-system).
	Namespace, Name string
	// Identity is this instance's holder identity in the Lease (node name and pid).
	Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod: the Lease's timing (defaults 15 s, 10 s, 2 s).
	// client-go's elector has no injectable clock, so they are real time.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Policy is what to do after losing the Lease (default ReturnOnLoss).
	Policy Policy
	// Fence, when set, follows each term (fence.go): the component's clients wrapped with it
	// write only while this instance's leadership is confirmed.
	Fence  *Fence
	Logger *slog.Logger
}

// Default fills the unset fields.
func (c *Config) Default() {
	if c.Namespace == "" {
		c.Namespace = metav1.NamespaceSystem
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports what client-go's elector would refuse, and the fields it needs.
func (c *Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("no client"))
	}
	if c.Name == "" {
		errs = append(errs, errors.New("no Lease name"))
	}
	if c.Identity == "" {
		errs = append(errs, errors.New("no holder identity"))
	}
	if c.LeaseDuration <= c.RenewDeadline {
		errs = append(errs, fmt.Errorf("lease duration %s must be greater than renew deadline %s", c.LeaseDuration, c.RenewDeadline))
	}
	if float64(c.RenewDeadline) <= leaderelection.JitterFactor*float64(c.RetryPeriod) {
		errs = append(errs, fmt.Errorf("renew deadline %s must be greater than %.1f × retry period %s", c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod))
	}
	if c.Policy != ReturnOnLoss && c.Policy != CampaignAgain {
		errs = append(errs, fmt.Errorf("unknown policy %d", c.Policy))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("leader election on lease %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// Campaign campaigns for the Lease until ctx ends and runs lead while holding it. lead's context
// ends when ctx does or the Lease is lost, and lead must return then. Campaign returns after lead
// has returned and the Lease has been released: nil when ctx ended (or lead returned nil by
// itself, its work done), lead's error if it returned one, ErrLost when the Lease was lost under
// ReturnOnLoss. Under CampaignAgain a lost Lease is campaigned for again.
func Campaign(ctx context.Context, cfg Config, lead func(context.Context) error) error {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return err
	}
	for {
		end, err := campaignOnce(ctx, &cfg, lead)
		if err != nil {
			return err
		}
		again, err := next(cfg.Policy, end)
		if !again {
			if errors.Is(err, ErrLost) {
				return fmt.Errorf("lease %s/%s: %w", cfg.Namespace, cfg.Name, err)
			}
			return err
		}
		cfg.Logger.Warn("lost the lease; campaigning again", "lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)
	}
}

// term is how one campaign ended.
type term struct {
	// stopped: the caller's context ended.
	stopped bool
	// lost: the elector ended the term (a renewal failed) while the caller's context was live.
	lost bool
	// leadErr is what lead returned.
	leadErr error
}

// next decides what follows a term: campaign again, or return err.
func next(p Policy, t term) (again bool, err error) {
	switch {
	case t.leadErr != nil:
		return false, t.leadErr
	case t.stopped:
		return false, nil
	case t.lost && p == CampaignAgain:
		return true, nil
	case t.lost:
		return false, ErrLost
	default:
		// lead returned nil while leading: its work is done.
		return false, nil
	}
}

// campaignOnce runs one elector until it stops leading, ctx ends, or lead returns.
func campaignOnce(ctx context.Context, cfg *Config, lead func(context.Context) error) (term, error) {
	// client-go calls OnStartedLeading in a goroutine it does not wait for; that goroutine only
	// hands the term's context over (one per elector Run, so the buffer never blocks), and lead
	// runs here, where Campaign waits for it.
	started := make(chan context.Context, 1)
	notes := &newLeaders{log: cfg.Logger, identity: cfg.Identity, lease: cfg.Namespace + "/" + cfg.Name}
	defer notes.close()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &releaseGuard{Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
			Client:     cfg.Client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
		}},
		Name:          cfg.Name,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(termCtx context.Context) { started <- termCtx },
			OnStoppedLeading: func() {},
			OnNewLeader:      notes.observe,
		},
	})
	if err != nil {
		return term{}, fmt.Errorf("leader election on lease %s/%s: %w", cfg.Namespace, cfg.Name, err)
	}
	if cfg.Fence != nil {
		cfg.Fence.begin(elector, cfg)
		defer cfg.Fence.end()
	}
	// The elector stops (and so releases the Lease) only when this function says so, after lead
	// has returned: were it given ctx, the Lease would be released while lead still runs.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	electorDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(electorDone)
		elector.Run(electorCtx)
	}()

	var t term
	select {
	case termCtx := <-started:
		if ctx.Err() == nil {
			t = runLead(ctx, termCtx, cfg, lead)
		}
	case <-electorDone:
		// Run returns by itself only after it led and a renewal failed.
		t.lost = true
	case <-ctx.Done():
	}
	stopElector()
	wg.Wait()
	t.stopped = ctx.Err() != nil
	return t, nil
}

// runLead runs lead for one term, with a context that ends when ctx does or the term does.
func runLead(ctx, termCtx context.Context, cfg *Config, lead func(context.Context) error) term {
	lease := cfg.Namespace + "/" + cfg.Name
	cfg.Logger.Info("became leader", "lease", lease, "identity", cfg.Identity)
	leadCtx, cancel := context.WithCancel(termCtx)
	stop := context.AfterFunc(ctx, cancel)
	err := lead(leadCtx)
	stop()
	cancel()
	// termCtx descends from the elector's context, which is not stopped yet: only the elector's
	// own failed renewal ends it.
	lost := termCtx.Err() != nil
	cfg.Logger.Info("stopped leading", "lease", lease, "identity", cfg.Identity, "lost", lost && ctx.Err() == nil)
	return term{lost: lost, leadErr: err}
}

// newLeaders logs who else leads. client-go calls OnNewLeader in goroutines it does not wait for,
// so after the term the log is closed and a late call does nothing.
type newLeaders struct {
	mu       sync.Mutex
	closed   bool
	log      *slog.Logger
	identity string
	lease    string
}

func (n *newLeaders) observe(holder string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || holder == "" || holder == n.identity {
		return
	}
	n.log.Info("another instance leads", "lease", n.lease, "leader", holder)
}

func (n *newLeaders) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
}
