package podnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Options configure the Agent.
type Options struct {
	NodeName    string
	ClusterCIDR netip.Prefix
	Host        Host
	// Resync re-reads the routes and the chain this often (someone may have removed them).
	Resync time.Duration
	Clock  clock.WithTicker
	Logger *slog.Logger
}

// Run keeps the node's pod routes and masquerade chain in sync with the Nodes until ctx ends, then
// removes both.
func Run(ctx context.Context, client kubernetes.Interface, opts Options) error {
	if opts.Resync == 0 {
		opts.Resync = 30 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	log := opts.Logger
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes := factory.Core().V1().Nodes()
	kick := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	}); err != nil {
		return fmt.Errorf("pod network: node handler: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer func() {
		if err := Cleanup(opts.Host); err != nil {
			log.Error("pod network: cleanup", "err", err)
		} else {
			log.Info("pod network: routes and masquerade chain removed")
		}
	}()
	if !cache.WaitFor(ctx, "", nodes.Informer().HasSyncedChecker()) {
		return nil
	}
	ticker := opts.Clock.NewTicker(opts.Resync)
	defer ticker.Stop()
	var lastSkipped []Skipped
	var lastMasq [][]string
	for {
		list, err := nodes.Lister().List(labels.Everything())
		if err == nil {
			skipped, masq, err := sync(ctx, opts, list, lastMasq)
			if err != nil {
				log.Error("pod network: sync failed; retrying", "err", err)
				lastMasq = nil
			} else {
				lastMasq = masq
			}
			if !slices.Equal(skipped, lastSkipped) {
				for _, s := range skipped {
					log.Warn("pod network: no route to a node's pods", "node", s.Node, "reason", s.Reason)
				}
				lastSkipped = skipped
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-ticker.C():
			lastMasq = nil // rewrite the chain on resync
		}
	}
}

// sync plans and applies once; it returns the skipped nodes and the masquerade rules in place.
func sync(ctx context.Context, opts Options, list []*corev1.Node, lastMasq [][]string) ([]Skipped, [][]string, error) {
	h := opts.Host
	onLink, err := h.OnLink()
	if err != nil {
		return nil, lastMasq, err
	}
	d := Desire(Input{Self: opts.NodeName, Nodes: list, OnLink: onLink})
	present, err := h.Routes()
	if err != nil {
		return d.Skipped, lastMasq, err
	}
	replace, del := Plan(d.Routes, present)
	var errs []error
	for _, r := range replace {
		if err := h.Replace(r); err != nil {
			errs = append(errs, err)
			continue
		}
		opts.Logger.Info("pod network: route set", "node", r.Node, "podCIDR", r.Dst.String(), "via", r.Gw.String())
	}
	for _, r := range del {
		if err := h.Delete(r); err != nil {
			errs = append(errs, err)
			continue
		}
		opts.Logger.Info("pod network: route removed", "podCIDR", r.Dst.String(), "via", r.Gw.String())
	}
	masq := MasqueradeRules(h.Chain, d.OwnPods, opts.ClusterCIDR)
	if !equalRules(masq, lastMasq) || lastMasq == nil {
		if err := h.SetMasquerade(ctx, masq); err != nil {
			errs = append(errs, err)
			masq = nil
		}
	}
	return d.Skipped, masq, errors.Join(errs...)
}

func equalRules(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

// Cleanup removes every route and the chain h owns (a clean stop, and skiff uninstall).
func Cleanup(h Host) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	present, err := h.Routes()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range present {
		errs = append(errs, h.Delete(r))
	}
	errs = append(errs, h.RemoveMasquerade(ctx))
	return errors.Join(errs...)
}
