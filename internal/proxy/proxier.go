package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Options configure a Proxier.
type Options struct {
	Config
	// PrepareInformers, when set, is given the informer factory before the proxy asks it for the
	// Service and EndpointSlice informers: in a process that also runs the API server, it puts
	// informers there that read the server's watch cache (one copy of each object, no decode).
	PrepareInformers func(informers.SharedInformerFactory)
	// Mode is the backend: ModeNftables (the default when empty) or ModeIPTables.
	Mode string
	// Device is the dummy interface holding the service range's route (at most 15 characters).
	Device string
	// DeviceMetric is the route's metric (distinct per node sharing a host).
	DeviceMetric int
	// LocalhostNodePorts turns on route_localnet so NodePorts answer on 127.0.0.1.
	LocalhostNodePorts bool
	// MinSyncInterval batches changes: at most one sync per interval (default 200ms).
	MinSyncInterval time.Duration
	// SyncPeriod re-checks the hooks and the device and, if they were tampered with, rewrites
	// everything (default 1 min).
	SyncPeriod time.Duration
	Host       Host
	Clock      clock.WithTicker
	Logger     *slog.Logger
	// Metrics, when set, records every sync.
	Metrics *Metrics
	// OnSync, when set, is called after every successful sync with its duration (for metrics and
	// benchmarks).
	OnSync func(d time.Duration, full bool)
	// HealthCheckAddress is the address the health-check node ports of LoadBalancer Services with
	// externalTrafficPolicy Local listen on (the node's); invalid or unspecified means every address.
	HealthCheckAddress netip.Addr
	// HealthzAddress, when set (host:port, kube-proxy's is port 10256), serves the proxy's own
	// /healthz and /livez.
	HealthzAddress string
	// Conntrack are the conntrack timeouts set on the node once its rules exist (zero: the
	// node's own; the cluster gives kube-proxy's, DefaultConntrackTimeouts).
	Conntrack ConntrackTimeouts
	// HealthTimeout is how long a change may wait for its sync before /healthz and the
	// health-check node ports report the proxy unhealthy (default 1 min).
	HealthTimeout time.Duration
}

func (o *Options) defaults() {
	if o.MinSyncInterval == 0 {
		o.MinSyncInterval = 200 * time.Millisecond
	}
	if o.SyncPeriod == 0 {
		o.SyncPeriod = time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DeviceMetric == 0 {
		o.DeviceMetric = 100
	}
	if o.HealthTimeout == 0 {
		o.HealthTimeout = time.Minute
	}
}

// Run programs the node from the API until ctx ends, then removes everything it owns.
func Run(ctx context.Context, client kubernetes.Interface, opts Options) error {
	opts.defaults()
	log := opts.Logger
	// Read once, as kube-proxy: the sysctl is the node's, set before the node starts.
	if liberal, err := opts.Host.ConntrackTCPLiberal(ctx); err != nil {
		log.Info("conntrack's TCP tracking taken as strict; INVALID packets are dropped", "err", err)
	} else if liberal {
		opts.ConntrackTCPLiberal = true
		log.Info("nf_conntrack_tcp_be_liberal is set; INVALID packets are not dropped")
	}
	be, err := newBackend(opts)
	if err != nil {
		return err
	}
	if err := setup(ctx, opts, be); err != nil {
		cleanupErr := teardown(opts)
		return errors.Join(err, cleanupErr)
	}
	if writes, err := applyConntrackTimeouts(ctx, opts.Host, opts.Conntrack); err != nil {
		log.Warn("conntrack timeouts not set; the node's stay", "err", err)
	} else if len(writes) > 0 {
		log.Info("conntrack timeouts set", "sysctls", writes)
	}
	defer func() {
		if err := teardown(opts); err != nil {
			log.Error("remove service rules", "err", err)
		} else {
			log.Info("service rules removed", "prefix", opts.Prefix)
		}
	}()

	health := &proxyHealth{clock: opts.Clock, timeout: opts.HealthTimeout}
	if opts.HealthzAddress != "" {
		if err := serveHealthz(ctx, opts.HealthzAddress, health, log); err != nil {
			return err
		}
	}
	healthChecks := newHealthServers(opts.HealthCheckAddress, health, log)
	defer healthChecks.close()

	factory := informers.NewSharedInformerFactory(client, 0)
	if opts.PrepareInformers != nil {
		opts.PrepareInformers(factory)
	}
	svcInformer := factory.Core().V1().Services()
	sliceInformer := factory.Discovery().V1().EndpointSlices()
	cidrInformer := factory.Networking().V1().ServiceCIDRs()
	dirty := make(chan struct{}, 1)
	poke := func() {
		health.queued()
		select {
		case dirty <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	if _, err := svcInformer.Informer().AddEventHandler(handler); err != nil {
		return fmt.Errorf("service informer: %w", err)
	}
	if _, err := sliceInformer.Informer().AddEventHandler(handler); err != nil {
		return fmt.Errorf("endpointslice informer: %w", err)
	}
	if _, err := cidrInformer.Informer().AddEventHandler(handler); err != nil {
		return fmt.Errorf("servicecidr informer: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !ctrlutil.WaitForCaches(ctx, log, svcInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced, cidrInformer.Informer().HasSynced) {
		return nil
	}

	var prevUDP UDPState
	synced := false
	sync := func() error {
		start := opts.Clock.Now()
		svcs, err := svcInformer.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		slices, err := sliceInformer.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		cidrs, err := cidrInformer.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		nextUDP := BuildUDPState(opts.Config, svcs, slices)
		full := !synced
		changed, objects, err := be.apply(ctx, ExtraServiceCIDRs(cidrs, opts.ServiceCIDR), svcs, slices)
		if err != nil {
			if opts.Metrics != nil && ctx.Err() == nil {
				opts.Metrics.restoreFailures.Inc()
			}
			return err
		}
		synced = true
		if !changed {
			healthChecks.sync(HealthChecks(opts.Config, svcs, slices))
			health.synced()
			return nil
		}
		// Conntrack entries of UDP endpoints that went (and of ports that got their first
		// endpoint) go once the rules no longer lead there, as kube-proxy does.
		if err := opts.Host.Flush(ctx, StaleConntrack(prevUDP, nextUDP)); err != nil {
			log.Warn("flush stale UDP conntrack entries", "err", err)
		}
		prevUDP = nextUDP
		// Health-check node ports follow the rules just written.
		healthChecks.sync(HealthChecks(opts.Config, svcs, slices))
		health.synced()
		d := opts.Clock.Since(start)
		if m := opts.Metrics; m != nil {
			m.syncDuration.Observe(d.Seconds())
			m.lastSync.Set(float64(opts.Clock.Now().Unix()))
			m.programmedChains.Set(float64(objects))
		}
		log.Debug("service rules synced", "services", len(svcs), "endpointSlices", len(slices), "duration", d, "full", full)
		if opts.OnSync != nil {
			opts.OnSync(d, full)
		}
		return nil
	}

	period := opts.Clock.NewTicker(opts.SyncPeriod)
	defer period.Stop()
	backoff := opts.MinSyncInterval
	poke()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-period.C():
			if missing, err := be.check(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				log.Error("re-check service rule hooks", "err", err)
			} else if missing {
				log.Info("service rule hooks or table were missing; rewriting all rules")
				poke()
			}
			continue
		case <-dirty:
		}
		if err := sync(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error("sync service rules", "err", err)
			backoff = min(backoff*2, 30*time.Second)
			poke()
		} else {
			backoff = opts.MinSyncInterval
		}
		// Rate limit: changes arriving meanwhile are batched into the next sync.
		select {
		case <-ctx.Done():
			return nil
		case <-opts.Clock.After(backoff):
		}
	}
}

// setup runs before the first sync: the service range is refused locally from now on.
func setup(ctx context.Context, opts Options, be backend) error {
	if opts.ServiceCIDR.IsValid() && opts.Device != "" {
		if err := opts.Host.EnsureDevice(ctx, opts.Device, opts.ServiceCIDR.String(), opts.DeviceMetric); err != nil {
			return err
		}
	}
	if opts.LocalhostNodePorts {
		if err := opts.Host.EnableRouteLocalnet(ctx); err != nil {
			return fmt.Errorf("route_localnet: %w", err)
		}
	}
	return be.setup(ctx)
}

// setupIPTables installs the iptables mode's base chains and hooks. A previous run's chains are
// kept (they keep serving) until the first full sync rewrites or deletes them.
func setupIPTables(ctx context.Context, opts Options) (*Ruleset, error) {
	save, err := opts.Host.Save(ctx)
	if err != nil {
		return nil, err
	}
	owned := ParseSave(save, opts.Prefix)
	var prev *Ruleset
	if len(owned.Chains["nat"])+len(owned.Chains["filter"]) == 0 {
		base := Build(opts.Config, nil, nil)
		input, _ := Plan(nil, base)
		if err := opts.Host.Restore(ctx, input); err != nil {
			return nil, fmt.Errorf("base service rules: %w", err)
		}
		prev = &base
	} else {
		opts.Logger.Info("found a previous run's service rules; the first sync replaces them", "prefix", opts.Prefix)
		prev = RulesetFromOwned(owned)
		// Chains a previous version did not have must exist before their hooks do.
		base := Build(opts.Config, nil, nil)
		for _, t := range []struct {
			have map[string][]string
			want map[string][]string
		}{{prev.NAT, base.NAT}, {prev.Filter, base.Filter}} {
			for name := range t.want {
				if _, ok := t.have[name]; !ok {
					t.have[name] = nil
				}
			}
		}
		input, _ := Plan(&Ruleset{NAT: map[string][]string{}, Filter: map[string][]string{}}, missingOnly(prev, base))
		if stale := staleHooks(owned, opts.Hooks()); !stale.Empty() {
			input += CleanupPlan(stale)
		}
		if err := opts.Host.Restore(ctx, input); err != nil {
			return nil, fmt.Errorf("base service rules: %w", err)
		}
	}
	if _, err := ensureHooks(ctx, opts); err != nil {
		return nil, err
	}
	return prev, nil
}

// unknown is a ruleset with the chains of all of rss and no known content: planning against it
// rewrites every wanted chain and deletes every other one.
func unknown(rss ...*Ruleset) *Ruleset {
	out := &Ruleset{NAT: map[string][]string{}, Filter: map[string][]string{}}
	for _, rs := range rss {
		if rs == nil {
			continue
		}
		for name := range rs.NAT {
			out.NAT[name] = []string{"(unknown)"}
		}
		for name := range rs.Filter {
			out.Filter[name] = []string{"(unknown)"}
		}
	}
	return out
}

// staleHooks are the saved hooks of the prefix that are not among want (a previous version's).
func staleHooks(o Owned, want []Hook) Owned {
	keep := map[string]bool{}
	for _, h := range want {
		keep[h.Table+" -A "+h.Chain+" "+h.Rule] = true
	}
	out := Owned{Chains: map[string][]string{}, Hooks: map[string][]string{}}
	for table, hooks := range o.Hooks {
		for _, h := range hooks {
			if !keep[table+" "+h] {
				out.Hooks[table] = append(out.Hooks[table], h)
			}
		}
	}
	return out
}

// missingOnly is base's chains whose content prev does not record (nil: created just now).
func missingOnly(prev *Ruleset, base Ruleset) Ruleset {
	out := Ruleset{NAT: map[string][]string{}, Filter: map[string][]string{}}
	for name, rules := range base.NAT {
		if prev.NAT[name] == nil {
			out.NAT[name] = rules
		}
	}
	for name, rules := range base.Filter {
		if prev.Filter[name] == nil {
			out.Filter[name] = rules
		}
	}
	return out
}

func ensureHooks(ctx context.Context, opts Options) (bool, error) {
	added := false
	for _, h := range opts.Hooks() {
		a, err := opts.Host.EnsureHook(ctx, h)
		if err != nil {
			return added, err
		}
		added = added || a
	}
	return added, nil
}

// teardown removes every chain, hook and table of the prefix (both modes) and the device, with its
// own deadline: it runs after the node's context has ended.
func teardown(opts Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := opts.Host.CleanupAll(ctx, opts.Prefix)
	if opts.Device != "" {
		err = errors.Join(err, opts.Host.DeleteDevice(ctx, opts.Device))
	}
	if err != nil {
		return fmt.Errorf("remove %s rules: %w", opts.Prefix, err)
	}
	return nil
}
