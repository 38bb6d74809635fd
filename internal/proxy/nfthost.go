package proxy

import (
	"context"
	"errors"
	"os/exec"
)

// NftApply runs script with `nft -f -`: one atomic transaction.
func (h Host) NftApply(ctx context.Context, script string) error {
	if script == "" {
		return nil
	}
	_, err := h.run(ctx, script, "nft", "-f", "-")
	return err
}

// NftHasTable reports whether the node's table is there (any failure to list it counts as not).
func (h Host) NftHasTable(ctx context.Context, table string) bool {
	_, err := h.run(ctx, "", "nft", "list", "table", "ip", table)
	return err == nil
}

// NftCleanup deletes prefix's table, if nft is installed and the table exists.
func (h Host) NftCleanup(ctx context.Context, prefix string) error {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil
	}
	return h.NftApply(ctx, NftDeleteTable(NftTable(prefix)))
}

// CleanupAll removes everything of prefix in both backends: its iptables chains and hooks and its
// nftables table (a node that switched modes across a restart leaves nothing stale).
func (h Host) CleanupAll(ctx context.Context, prefix string) error {
	return errors.Join(h.Cleanup(ctx, prefix), h.NftCleanup(ctx, prefix))
}
