package proxy

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The proxy's backends (Options.Mode).
const (
	// ModeNftables programs one nftables table of the node's own (NftTable); the default.
	ModeNftables = "nftables"
	// ModeIPTables programs iptables chains carrying the node's prefix, hooked into the built-in
	// chains.
	ModeIPTables = "iptables"
)

// ValidMode reports whether mode names a backend ("" is the default, nftables).
func ValidMode(mode string) bool {
	return mode == "" || mode == ModeNftables || mode == ModeIPTables
}

// backend is what differs between the modes: the pure Build/Plan of each and the commands that
// apply their output. Run calls them from one goroutine.
type backend interface {
	// setup removes whatever a previous run of either mode left and installs the base rules (the
	// service range is refused from then on).
	setup(ctx context.Context) error
	// apply programs svcs and slices, refusing the extra service ranges too; changed is false
	// when there was nothing to do, objects counts the chains programmed.
	apply(ctx context.Context, extra []netip.Prefix, svcs []*corev1.Service, slices []*discoveryv1.EndpointSlice) (changed bool, objects int, err error)
	// check re-checks what others could have removed (hooks, the table) and repairs it; true
	// means the next apply rewrites everything.
	check(ctx context.Context) (bool, error)
}

func newBackend(opts Options) (backend, error) {
	switch opts.Mode {
	case "", ModeNftables:
		return &nftBackend{opts: opts, table: NftTable(opts.Prefix)}, nil
	case ModeIPTables:
		return &iptablesBackend{opts: opts}, nil
	}
	return nil, fmt.Errorf("proxy mode %q: want %s or %s", opts.Mode, ModeNftables, ModeIPTables)
}

// iptablesBackend is Build, Plan and iptables-restore --noflush.
type iptablesBackend struct {
	opts Options
	prev *Ruleset
}

func (b *iptablesBackend) setup(ctx context.Context) error {
	// A previous run in nftables mode leaves its table; this mode would never touch it.
	if err := b.opts.Host.NftCleanup(ctx, b.opts.Prefix); err != nil {
		return fmt.Errorf("remove the nftables table of a previous run: %w", err)
	}
	prev, err := setupIPTables(ctx, b.opts)
	b.prev = prev
	return err
}

func (b *iptablesBackend) apply(ctx context.Context, extra []netip.Prefix, svcs []*corev1.Service, slices []*discoveryv1.EndpointSlice) (bool, int, error) {
	cfg := b.opts.Config
	cfg.ExtraServiceCIDRs = extra
	next := Build(cfg, svcs, slices)
	input, changed := Plan(b.prev, next)
	if !changed {
		return false, 0, nil
	}
	if err := b.opts.Host.Restore(ctx, input); err != nil {
		b.prev = unknown(b.prev, &next) // the tables may be anything now: rewrite them all next time
		return true, 0, err
	}
	b.prev = &next
	return true, len(next.NAT) + len(next.Filter), nil
}

func (b *iptablesBackend) check(ctx context.Context) (bool, error) {
	added, err := ensureHooks(ctx, b.opts)
	if err == nil && added {
		b.prev = unknown(b.prev)
	}
	return added, err
}

// nftBackend is BuildNft, PlanNft and nft -f.
type nftBackend struct {
	opts  Options
	table string
	prev  *NftRuleset
}

func (b *nftBackend) setup(ctx context.Context) error {
	// A previous run in iptables mode leaves its chains and hooks.
	if err := b.opts.Host.Cleanup(ctx, b.opts.Prefix); err != nil {
		return fmt.Errorf("remove the iptables chains of a previous run: %w", err)
	}
	// The full sync deletes a previous run's table in the same transaction.
	base := BuildNft(b.opts.Config, nil, nil)
	script, _ := PlanNft(b.table, nil, base)
	if err := b.opts.Host.NftApply(ctx, script); err != nil {
		return fmt.Errorf("base service rules: %w", err)
	}
	b.prev = &base
	return nil
}

func (b *nftBackend) apply(ctx context.Context, extra []netip.Prefix, svcs []*corev1.Service, slices []*discoveryv1.EndpointSlice) (bool, int, error) {
	cfg := b.opts.Config
	cfg.ExtraServiceCIDRs = extra
	next := BuildNft(cfg, svcs, slices)
	script, changed := PlanNft(b.table, b.prev, next)
	if !changed {
		return false, 0, nil
	}
	if err := b.opts.Host.NftApply(ctx, script); err != nil {
		b.prev = nil // the table may be anything now: replace it whole next time
		return true, 0, err
	}
	b.prev = &next
	return true, len(next.Chains), nil
}

func (b *nftBackend) check(ctx context.Context) (bool, error) {
	if b.prev != nil && b.opts.Host.NftHasTable(ctx, b.table) {
		return false, nil
	}
	b.prev = nil
	return true, nil
}
