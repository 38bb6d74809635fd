package robustness

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Scenario is a cluster shape and a fault.
type Scenario struct {
	Name  string
	Nodes int
	Fault FaultKind
	// ExternalEtcd: the nodes are control planes without members of their own, on one external
	// etcd (--etcd-servers), which the faults may also act on.
	ExternalEtcd bool
	// Workers join beside the control planes: real kubelets run the workload's pods, and the
	// traffic goes through their balancers too. Every node then runs in a network namespace of
	// its own on a test bridge (netns.go), as in the e2e harness.
	Workers int
}

// Scenarios are the suite's scenarios by name.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "single-kill", Nodes: 1, Fault: FaultKill},
		{Name: "single-pause", Nodes: 1, Fault: FaultPause},
		{Name: "single-compact", Nodes: 1, Fault: FaultCompact},
		{Name: "single-restore", Nodes: 1, Fault: FaultRestore},
		{Name: "ha-kill-etcd-leader", Nodes: 3, Fault: FaultKillEtcdLeader},
		{Name: "ha-kill-lease-holder", Nodes: 3, Fault: FaultKillLeaseHolder},
		{Name: "ha-pause", Nodes: 3, Fault: FaultPause},
		{Name: "ha-compact", Nodes: 3, Fault: FaultCompact},
		{Name: "ha-partition", Nodes: 3, Fault: FaultPartition},
		{Name: "ha-partition-oneway", Nodes: 3, Fault: FaultPartitionOneWay},
		{Name: "ha-full-disk", Nodes: 3, Fault: FaultFullDisk},
		{Name: "ha-restore", Nodes: 3, Fault: FaultRestore},
		{Name: "ext-kill", Nodes: 2, Fault: FaultKill, ExternalEtcd: true},
		{Name: "ext-pause-etcd", Nodes: 2, Fault: FaultPauseEtcd, ExternalEtcd: true},
		{Name: "ext-kill-etcd", Nodes: 2, Fault: FaultKillEtcd, ExternalEtcd: true},
		{Name: "ext-compact", Nodes: 2, Fault: FaultCompact, ExternalEtcd: true},
		{Name: "workers-kill-etcd-leader", Nodes: 3, Workers: 2, Fault: FaultKillEtcdLeader},
		{Name: "workers-kill-lease-holder", Nodes: 3, Workers: 2, Fault: FaultKillLeaseHolder},
		{Name: "workers-pause", Nodes: 3, Workers: 2, Fault: FaultPause},
	}
}

// RunConfig is one run of a scenario on a started cluster.
type RunConfig struct {
	Scenario Scenario
	Cluster  *Cluster
	Duration time.Duration
	Schedule ScheduleConfig
	Traffic  TrafficConfig
	Logger   *slog.Logger
}

// endpoint is one way to the API: a node's API server or its balancer.
type endpoint struct {
	cs   *kubernetes.Clientset
	name string
}

func endpoints(nodes []*Node, timeout time.Duration) ([]endpoint, error) {
	var out []endpoint
	for _, n := range nodes {
		ways := []bool{false, true}
		if n.Worker {
			ways = []bool{true} // no API server of its own
		}
		for _, viaLB := range ways {
			cfg, err := n.RESTConfig(viaLB)
			if err != nil {
				return nil, err
			}
			cfg.Timeout = 0 // calls are bounded by their contexts; watches run long
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
			}
			name := n.Name
			if viaLB {
				name += "/lb"
			}
			out = append(out, endpoint{cs: cs, name: name})
		}
	}
	return out, nil
}

// Run drives traffic through every node's API server and balancer, a watcher and an informer
// on each, injects the scheduled faults, lets the cluster recover, and returns the history.
func Run(ctx context.Context, c RunConfig) (*History, error) {
	clk := c.Cluster.Clock
	eps, err := endpoints(append(append([]*Node(nil), c.Cluster.Nodes...), c.Cluster.Workers...), c.Traffic.Timeout)
	if err != nil {
		return nil, err
	}
	ns := "robustness-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	if _, err := eps[0].cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	wcfg, err := failoverConfig(c.Cluster.Nodes)
	if err != nil {
		return nil, err
	}
	wcs, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		return nil, fmt.Errorf("workload client: %w", err)
	}
	var workers []string
	for _, n := range c.Cluster.Workers {
		workers = append(workers, n.Name)
	}
	wl, err := StartWorkload(ctx, wcs, ns, workers, clk, c.Logger)
	if err != nil {
		return nil, err
	}
	log := NewLog(c.Scenario.Name, clk)
	var clients, watchers []*Client
	var informers []*Informer
	for i, ep := range eps {
		rc := ep.cs.CoreV1().RESTClient()
		clients = append(clients, NewClient(i, rc, ns, log))
		watchers = append(watchers, NewClient(len(eps)+i, rc, ns, log))
		informers = append(informers, NewInformer(len(eps)+i, ep.cs, ns))
	}
	c.Cluster.log, c.Cluster.lister = log, clients[0]
	start := clients[0].List(ctx, "", "", 0)
	if start.Outcome != OutcomeOK {
		wl.Stop()
		return nil, fmt.Errorf("initial LIST: %s", start.Reason)
	}
	observe, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	var observers sync.WaitGroup
	for i := range watchers {
		observers.Go(func() { watchers[i].WatchFrom(observe, start.RV, time.Second, clk) })
		observers.Go(func() { informers[i].Run(observe) })
	}
	traffic, stopTraffic := context.WithTimeout(ctx, c.Duration)
	var load sync.WaitGroup
	for _, cl := range clients {
		load.Go(func() { cl.Run(traffic, c.Traffic, clk) })
	}
	load.Go(func() { wl.Drive(traffic, c.Traffic.Seed) })
	c.Logger.Info("traffic started", "scenario", c.Scenario.Name, "namespace", ns, "clients", len(clients), "startRV", start.RV)
	// A fault starts at its planned time, or a gap after the previous one recovered if that took
	// longer; none starts in the cooldown. It runs on ctx, not traffic: a node being restarted
	// when traffic stops is waited for.
	next := time.Duration(0)
	for _, f := range Schedule(c.Schedule) {
		at := max(f.At, next)
		if at > c.Duration-c.Schedule.Cooldown {
			break
		}
		select {
		case <-traffic.Done():
		case <-clk.After(at - time.Duration(log.Now())):
		}
		if traffic.Err() != nil {
			break
		}
		t0 := log.Now()
		name, err := c.Cluster.Inject(ctx, f)
		next = time.Duration(log.Now()) + c.Schedule.Gap
		log.AddFault(name, t0, err)
		c.Logger.Info("fault", "name", name, "took", time.Duration(log.Now()-t0), "err", err)
	}
	<-traffic.Done()
	stopTraffic()
	load.Wait()
	final, err := recoverCluster(ctx, c, clients[0])
	if err != nil {
		stopObserving()
		observers.Wait()
		h := log.History(start.RV, nil, nil)
		h.Objects, h.ObjectGaps = wl.Stop()
		return h, err
	}
	var watcherIDs []int
	for _, w := range watchers {
		watcherIDs = append(watcherIDs, w.ID)
	}
	states := converge(ctx, clk, informers, final.Items, func() bool { return log.CaughtUp(watcherIDs) })
	stopObserving()
	observers.Wait()
	h := log.History(start.RV, &final, states)
	h.Objects, h.ObjectGaps = wl.Stop()
	return h, nil
}

// recoverCluster restarts what a fault left down, waits for every node, and takes the final
// consistent LIST.
func recoverCluster(ctx context.Context, c RunConfig, cl *Client) (List, error) {
	for _, n := range append(append([]*Node(nil), c.Cluster.Nodes...), c.Cluster.Workers...) {
		if !n.Running() {
			if err := n.Start(); err != nil {
				return List{}, err
			}
		}
		_ = n.Resume()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := n.WaitReady(wctx, c.Cluster.Clock)
		cancel()
		if err != nil {
			return List{}, err
		}
	}
	var last List
	for range 30 {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		last = cl.List(lctx, "", "", 0)
		cancel()
		if last.Outcome == OutcomeOK {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-c.Cluster.Clock.After(time.Second):
		}
	}
	return last, fmt.Errorf("no final LIST: %s", last.Reason)
}

// convergeWait bounds the wait for informers and watchers after the run. client-go's reflector
// backs off after failed lists and watches, up to 30 s doubled by its jitter, and resets only
// after two quiet minutes: a run whose node went down several times in a few seconds (the
// restores, each a few seconds of refused connections) saw an informer take more than a minute
// to try again, after the last restore, a false alarm of the one-minute wait this replaced.
const convergeWait = 2 * time.Minute

// converge waits (at most convergeWait) for every informer to hold the final state and the watchers
// to catch up, and returns the informers' states.
func converge(ctx context.Context, clk clock.WithTicker, informers []*Informer, final []Item, watchersCaughtUp func() bool) []InformerState {
	deadline := clk.Now().Add(convergeWait)
	for {
		var states []InformerState
		all := watchersCaughtUp()
		for _, inf := range informers {
			s := inf.State()
			states = append(states, s)
			all = all && s.Matches(final)
		}
		if all || clk.Now().After(deadline) || ctx.Err() != nil {
			return states
		}
		select {
		case <-ctx.Done():
		case <-clk.After(200 * time.Millisecond):
		}
	}
}

// ReportDir is where a run's report goes.
func ReportDir(base, scenario string, now time.Time) string {
	return filepath.Join(base, scenario+"-"+now.UTC().Format("20060102T150405"))
}
