package netpol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// Options configure the Agent.
type Options struct {
	// NodeName is this node; Prefix its service-proxy prefix (proxy.NodePrefix), which names
	// the table.
	NodeName, Prefix string
	// LogDrops logs every dropped packet (rate limited) to the kernel log.
	LogDrops bool
	// PrepareInformers, when set, is given the informer factory before the agent asks it for
	// informers (in a process with the API server: informers on its watch cache).
	PrepareInformers func(informers.SharedInformerFactory)
	// MinSyncInterval batches changes: at most one sync per interval (default 100ms).
	MinSyncInterval time.Duration
	// SyncPeriod re-checks that the table is there, rewriting it whole if not (default 1 min).
	SyncPeriod time.Duration
	// BridgeNetfilter is the sysctl file that makes bridged traffic (between two pods of one
	// node) pass the forward hook; empty means /proc/sys/net/bridge/bridge-nf-call-iptables,
	// "-" leaves it alone (tests in their own namespace).
	BridgeNetfilter string
	// Dynamic, when set, lets the agent enforce ClusterNetworkPolicy too, once its CRD
	// (policy.networking.k8s.io/v1beta1) is installed.
	Dynamic dynamic.Interface
	// DiscoveryPeriod is how often the agent looks for the ClusterNetworkPolicy CRD until it
	// finds it (default 30 s).
	DiscoveryPeriod time.Duration
	Host            proxy.Host
	Clock           clock.WithTicker
	Logger          *slog.Logger
	Metrics         *Metrics
	// OnSync, when set, is called after every successful sync (benchmarks).
	OnSync func(SyncResult)
}

// SyncResult describes one sync that wrote to the table.
type SyncResult struct {
	// Full is a rewrite of the whole table (the first sync, or after a failure).
	Full bool
	// Build is how long computing the ruleset took; Apply how long nft took; Latency how long
	// the oldest change the sync carried waited for it.
	Build, Apply, Latency time.Duration
	// ScriptBytes is the size of the nft transaction; Rules and Elements the table's size.
	ScriptBytes, Rules, Elements int
}

func (o *Options) defaults() {
	if o.MinSyncInterval == 0 {
		o.MinSyncInterval = 100 * time.Millisecond
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
	if o.DiscoveryPeriod == 0 {
		o.DiscoveryPeriod = 30 * time.Second
	}
	if o.BridgeNetfilter == "" {
		o.BridgeNetfilter = "/proc/sys/net/bridge/bridge-nf-call-iptables"
	}
}

// Run enforces the cluster's NetworkPolicies on this node until ctx ends. It leaves the table in
// place when it returns: enforcement outlives a restart (Uninstall removes it).
func Run(ctx context.Context, client kubernetes.Interface, opts Options) error {
	opts.defaults()
	log := opts.Logger
	table := Table(opts.Prefix)
	if err := ensureBridgeNetfilter(opts.BridgeNetfilter); err != nil {
		log.Warn("traffic between pods of this node passes no policy", "err", err)
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	if opts.PrepareInformers != nil {
		opts.PrepareInformers(factory)
	}
	pols := factory.Networking().V1().NetworkPolicies()
	pods := factory.Core().V1().Pods()
	nss := factory.Core().V1().Namespaces()
	nodes := factory.Core().V1().Nodes()
	if opts.PrepareInformers == nil {
		// Over HTTPS every worker holds every pod: keep only what the rules are made of.
		if err := pods.Informer().SetTransform(trimPod); err != nil {
			return fmt.Errorf("pod informer transform: %w", err)
		}
	}
	dirty := make(chan struct{}, 1)
	// changes carries the time of the oldest change not yet taken by the loop (informer
	// goroutines poke; only the loop reads it and owns pendingSince).
	changes := make(chan time.Time, 1)
	var pendingSince time.Time
	poke := func() {
		select {
		case changes <- opts.Clock.Now():
		default:
		}
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
	for name, inf := range map[string]cache.SharedIndexInformer{"networkpolicy": pols.Informer(), "pod": pods.Informer(),
		"namespace": nss.Informer(), "node": nodes.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("%s informer: %w", name, err)
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !ctrlutil.WaitForCaches(ctx, log, pols.Informer().HasSynced, pods.Informer().HasSynced, nss.Informer().HasSynced, nodes.Informer().HasSynced) {
		return nil
	}
	cnps := newClusterPolicies(opts, client, handler)
	var wg sync.WaitGroup
	defer wg.Wait()
	if opts.Dynamic != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cnps.run(ctx)
		}()
	}

	var prev *Ruleset // nil: the next sync rewrites the whole table
	sync := func() error {
		start := opts.Clock.Now()
		in := Input{NodeName: opts.NodeName, LogDrops: opts.LogDrops}
		var err error
		if in.Policies, err = pols.Lister().List(labels.Everything()); err != nil {
			return err
		}
		if in.Pods, err = pods.Lister().List(labels.Everything()); err != nil {
			return err
		}
		if in.Namespaces, err = nss.Lister().List(labels.Everything()); err != nil {
			return err
		}
		if in.Nodes, err = nodes.Lister().List(labels.Everything()); err != nil {
			return err
		}
		if in.ClusterPolicies, err = cnps.list(); err != nil {
			return err
		}
		next := Build(in)
		built := opts.Clock.Now()
		script, changed := Plan(table, prev, next)
		full := prev == nil
		if changed {
			if err := opts.Host.NftApply(ctx, script); err != nil {
				prev = nil
				if m := opts.Metrics; m != nil && ctx.Err() == nil {
					m.syncFailures.Inc()
				}
				return err
			}
		}
		prev = &next
		done := opts.Clock.Now()
		res := SyncResult{Full: full, Build: built.Sub(start), Apply: done.Sub(built), ScriptBytes: len(script),
			Rules: next.Rules(), Elements: next.Elements()}
		if !pendingSince.IsZero() {
			res.Latency = done.Sub(pendingSince)
			pendingSince = time.Time{}
		}
		if m := opts.Metrics; m != nil {
			m.observe(res, changed)
		}
		if changed {
			log.Debug("network policy rules synced", "policies", len(in.Policies), "full", full,
				"build", res.Build, "apply", res.Apply, "rules", res.Rules, "elements", res.Elements)
			if opts.OnSync != nil {
				opts.OnSync(res)
			}
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
			if prev != nil && !hasTable(ctx, opts.Host, table) {
				if ctx.Err() != nil {
					return nil
				}
				log.Info("network policy table was missing; rewriting it", "table", table)
				prev = nil
				poke()
			}
			continue
		case <-dirty:
		}
		select {
		case t := <-changes:
			if pendingSince.IsZero() {
				pendingSince = t
			}
		default:
		}
		if err := sync(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error("sync network policy rules", "err", err)
			backoff = min(backoff*2, 30*time.Second)
			poke()
		} else {
			backoff = opts.MinSyncInterval
		}
		// Changes arriving meanwhile are batched into the next sync.
		select {
		case <-ctx.Done():
			return nil
		case <-opts.Clock.After(backoff):
		}
	}
}

// Cleanup deletes the node's table (skiff uninstall); nothing to do without nft or the table.
func Cleanup(ctx context.Context, h proxy.Host, prefix string) error {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil
	}
	return h.NftApply(ctx, proxy.NftDeleteTable(Table(prefix)))
}

func hasTable(ctx context.Context, h proxy.Host, table string) bool {
	_, err := h.Output(ctx, "", "nft", "list", "table", "ip", table)
	return err == nil
}

// ensureBridgeNetfilter turns bridge-nf-call-iptables on: without it, frames the pod bridge
// switches between two pods of the node never reach the forward hook.
func ensureBridgeNetfilter(path string) error {
	if path == "-" {
		return nil
	}
	if cur, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(cur)) == "1" {
		return nil
	}
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("turn on %s (is the br_netfilter module loaded?): %w", path, err)
	}
	return nil
}

// trimPod keeps of a pod what the rules are made of: its name, namespace, labels, node, host
// network, phase, addresses and container ports.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{}
	out.Name, out.Namespace, out.UID, out.ResourceVersion = p.Name, p.Namespace, p.UID, p.ResourceVersion
	out.Labels = p.Labels
	out.Spec.NodeName, out.Spec.HostNetwork = p.Spec.NodeName, p.Spec.HostNetwork
	out.Status.Phase, out.Status.PodIP, out.Status.PodIPs = p.Status.Phase, p.Status.PodIP, p.Status.PodIPs
	out.Spec.InitContainers = portsOnly(p.Spec.InitContainers)
	out.Spec.Containers = portsOnly(p.Spec.Containers)
	return out, nil
}

// portsOnly are the containers that declare ports, with their names and ports alone.
func portsOnly(cs []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for _, c := range cs {
		if len(c.Ports) > 0 {
			out = append(out, corev1.Container{Name: c.Name, Ports: c.Ports})
		}
	}
	return out
}

// DroppedPackets reads the table's drop counters (packets per direction).
func DroppedPackets(ctx context.Context, h proxy.Host, table string) (ingress, egress uint64, err error) {
	out, err := h.Output(ctx, "", "nft", "-j", "list", "counters", "table", "ip", table)
	if err != nil {
		return 0, 0, err
	}
	var doc struct {
		Nftables []struct {
			Counter *struct {
				Name    string `json:"name"`
				Packets uint64 `json:"packets"`
			} `json:"counter"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return 0, 0, fmt.Errorf("nft counters of %s: %w", table, err)
	}
	found := 0
	for _, e := range doc.Nftables {
		if e.Counter == nil {
			continue
		}
		switch e.Counter.Name {
		case CounterDroppedIngress:
			ingress, found = e.Counter.Packets, found+1
		case CounterDroppedEgress:
			egress, found = e.Counter.Packets, found+1
		}
	}
	if found != 2 {
		return ingress, egress, errors.New("nft counters: the table has no drop counters yet")
	}
	return ingress, egress, nil
}
