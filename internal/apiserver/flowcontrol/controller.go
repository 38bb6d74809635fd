package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/utils/clock"
)

// Config is what a Controller needs.
type Config struct {
	// ServerLimit is the total seats shared by the Limited levels (DefaultServerLimit when 0).
	ServerLimit int
	Clock       clock.Clock
	Logger      *slog.Logger
	// Registry receives the apiserver_flowcontrol_* metrics (nil: not registered).
	Registry prometheus.Registerer
}

// Controller classifies requests and holds them to their priority level's limit. Safe for
// concurrent use.
type Controller struct {
	serverLimit int
	clock       clock.Clock
	log         *slog.Logger
	metrics     *metrics
	counts      *ObjectCounts

	mu sync.Mutex
	// configured is false until the first Update: until then every request runs unqueued.
	configured bool
	schemas    []*flowcontrolv1.FlowSchema
	levels     map[string]*level
}

// level is one priority level's live state. A level dropped from the configuration lives on for
// the requests that still hold or wait for its seats.
type level struct {
	plan LevelPlan
	qs   *QueueSet // nil for exempt levels
	// waiters holds each request enqueued and not yet dispatched or given up.
	waiters map[*Request]*waiter
}

// waiter is a request of a Limited level between Enqueue and its dispatch.
type waiter struct {
	ready  chan struct{}
	schema string
	// queued is set once Enqueue left the request waiting (it then counts in the inqueue gauge).
	queued bool
}

// Rejection is a refused request: the API server answers it 429 with Retry-After.
type Rejection struct {
	Reason                     string // queue-full, concurrency-limit, time-out, cancelled
	FlowSchema, PriorityLevel  string
	FlowSchemaUID, PriorityUID string
	RetryAfter                 time.Duration
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("too many requests (priority level %q, %s)", r.PriorityLevel, r.Reason)
}

// IsRejection reports whether err is a Rejection and returns it.
func IsRejection(err error) (*Rejection, bool) {
	var r *Rejection
	ok := errors.As(err, &r)
	return r, ok
}

// Ticket is an admitted request; Finish gives its seats back (it may be called more than once,
// e.g. when a watch's initialisation ends and again when the watch returns).
type Ticket struct {
	FlowSchema, PriorityLevel  string
	FlowSchemaUID, PriorityUID string

	c    *Controller
	lvl  *level
	req  *Request
	once sync.Once
}

// Finish releases the ticket's seats.
func (t *Ticket) Finish() {
	if t == nil || t.c == nil {
		return
	}
	t.once.Do(func() { t.c.finish(t) })
}

// New returns a Controller with no configuration (every request runs until Update is called).
func New(cfg Config) (*Controller, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		return nil, errors.New("flowcontrol: a Logger is required")
	}
	if cfg.ServerLimit <= 0 {
		cfg.ServerLimit = DefaultServerLimit
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	return &Controller{serverLimit: cfg.ServerLimit, clock: cfg.Clock, log: cfg.Logger, metrics: m, levels: map[string]*level{},
		counts: NewObjectCounts(cfg.Clock, countRefresh)}, nil
}

// countRefresh is how often a resource's object count is read again for LIST width estimates.
const countRefresh = 10 * time.Second

// ObjectCount is resource's object count for width estimates, refreshed through count at most
// every few seconds (see ObjectCounts).
func (c *Controller) ObjectCount(resource string, count func() (int64, error)) int64 {
	return c.counts.Get(resource, count)
}

// Update replaces the configuration. Schemas whose level does not exist are ignored (Kubernetes
// calls them dangling). Levels keep their queued and executing requests across changes.
func (c *Controller) Update(levels []*flowcontrolv1.PriorityLevelConfiguration, schemas []*flowcontrolv1.FlowSchema) {
	plans := PlanLevels(levels, c.serverLimit)
	var live []*flowcontrolv1.FlowSchema
	for _, fs := range schemas {
		if _, ok := plans[fs.Spec.PriorityLevelConfiguration.Name]; ok {
			live = append(live, fs)
		}
	}
	sortSchemas(live)
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[string]*level, len(plans))
	for name, p := range plans {
		old := c.levels[name]
		switch {
		case p.Exempt:
			if old != nil && old.qs != nil {
				// Limited to exempt: whoever waits runs now.
				for _, r := range old.qs.Reconfigure(QueueSetConfig{Limit: 1 << 30}, now) {
					c.wake(old, r, now)
				}
			}
			next[name] = &level{plan: p, waiters: map[*Request]*waiter{}}
		case old != nil && old.qs != nil:
			old.plan = p
			for _, r := range old.qs.Reconfigure(p.QueueSet, now) {
				c.wake(old, r, now)
			}
			next[name] = old
		default:
			next[name] = &level{plan: p, qs: NewQueueSet(p.QueueSet), waiters: map[*Request]*waiter{}}
		}
		if !p.Exempt {
			c.metrics.nominalLimit.WithLabelValues(name).Set(float64(p.QueueSet.Limit))
		}
	}
	c.schemas, c.levels, c.configured = live, next, true
}

// Limit is a level's current concurrency limit in seats (0 for exempt or unknown levels).
func (c *Controller) Limit(levelName string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.levels[levelName]; l != nil && l.qs != nil {
		return l.qs.Config().Limit
	}
	return 0
}

// Admit classifies the request and waits, at most maxWait and no longer than ctx, for seats on
// its priority level. It returns a Ticket to Finish when the request is done, or a *Rejection.
func (c *Controller) Admit(ctx context.Context, d Digest, seats int, maxWait time.Duration) (*Ticket, error) {
	c.mu.Lock()
	if !c.configured {
		c.mu.Unlock()
		return &Ticket{}, nil
	}
	fs, dist := Classify(c.schemas, d)
	if fs == nil {
		// Kubernetes always has the catch-all schema; without it a request runs unqueued.
		c.mu.Unlock()
		return &Ticket{}, nil
	}
	lvl := c.levels[fs.Spec.PriorityLevelConfiguration.Name]
	t := &Ticket{FlowSchema: fs.Name, FlowSchemaUID: string(fs.UID), PriorityLevel: lvl.plan.Name, PriorityUID: lvl.plan.UID}
	labels := []string{lvl.plan.Name, fs.Name}
	if lvl.qs == nil {
		c.mu.Unlock()
		c.metrics.dispatched.WithLabelValues(labels...).Inc()
		c.metrics.executing.WithLabelValues(labels...).Inc()
		c.metrics.executingSeats.WithLabelValues(labels...).Add(1)
		t.c, t.lvl, t.req = c, lvl, &Request{Seats: 1}
		return t, nil
	}
	now := c.clock.Now()
	r := &Request{Flow: FlowHash(fs.Name, dist), Seats: seats}
	w := &waiter{ready: make(chan struct{}), schema: fs.Name}
	lvl.waiters[r] = w
	t.c, t.lvl, t.req = c, lvl, r
	outcome, dispatched := lvl.qs.Enqueue(r, now)
	for _, o := range dispatched {
		c.wake(lvl, o, now)
	}
	switch outcome {
	case RejectedQueueFull, RejectedConcurrencyLimit:
		delete(lvl.waiters, r)
		c.mu.Unlock()
		reason := "queue-full"
		if outcome == RejectedConcurrencyLimit {
			reason = "concurrency-limit"
		}
		return nil, c.reject(t, reason)
	case Queued:
		w.queued = true
		c.metrics.inQueue.WithLabelValues(labels...).Inc()
	}
	c.mu.Unlock()
	if outcome == Dispatched {
		return t, nil
	}

	timer := c.clock.NewTimer(maxWait)
	defer timer.Stop()
	reason := ""
	select {
	case <-w.ready:
		return t, nil
	case <-ctx.Done():
		reason = "cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "time-out"
		}
	case <-timer.C():
		reason = "time-out"
	}
	c.mu.Lock()
	cancelled := lvl.qs.Cancel(r, c.clock.Now())
	if cancelled {
		delete(lvl.waiters, r)
	}
	c.mu.Unlock()
	if !cancelled {
		// Dispatched while the wait ended: it runs.
		return t, nil
	}
	c.metrics.inQueue.WithLabelValues(labels...).Dec()
	c.metrics.wait.WithLabelValues(append(labels, "false")...).Observe(c.clock.Since(r.Arrived()).Seconds())
	return nil, c.reject(t, reason)
}

func (c *Controller) reject(t *Ticket, reason string) *Rejection {
	c.metrics.rejected.WithLabelValues(t.PriorityLevel, t.FlowSchema, reason).Inc()
	return &Rejection{
		Reason: reason, FlowSchema: t.FlowSchema, PriorityLevel: t.PriorityLevel,
		FlowSchemaUID: t.FlowSchemaUID, PriorityUID: t.PriorityUID, RetryAfter: time.Second,
	}
}

// wake marks r dispatched and releases its waiter. Called with c.mu held.
func (c *Controller) wake(lvl *level, r *Request, now time.Time) {
	w, ok := lvl.waiters[r]
	if !ok {
		return
	}
	delete(lvl.waiters, r)
	close(w.ready)
	labels := []string{lvl.plan.Name, w.schema}
	c.metrics.dispatched.WithLabelValues(labels...).Inc()
	c.metrics.executing.WithLabelValues(labels...).Inc()
	c.metrics.executingSeats.WithLabelValues(labels...).Add(float64(r.Seats))
	if w.queued {
		c.metrics.inQueue.WithLabelValues(labels...).Dec()
	}
	c.metrics.wait.WithLabelValues(append(labels, "true")...).Observe(now.Sub(r.Arrived()).Seconds())
}

func (c *Controller) finish(t *Ticket) {
	labels := []string{t.PriorityLevel, t.FlowSchema}
	c.metrics.executing.WithLabelValues(labels...).Dec()
	c.metrics.executingSeats.WithLabelValues(labels...).Sub(float64(t.req.Seats))
	if t.lvl.qs == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for _, r := range t.lvl.qs.Finish(t.req, now) {
		c.wake(t.lvl, r, now)
	}
}
