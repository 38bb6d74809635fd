package etcd3

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"
)

// DefaultCompactionInterval is how often old revisions are compacted, as in Kubernetes.
const DefaultCompactionInterval = 5 * time.Minute

// CompactKey is the key API servers coordinate compaction on: its version counts the compactions
// done, so of several API servers ticking in the same interval only one compacts.
const CompactKey = "compact_rev_key"

// Compactor periodically compacts etcd to the revision it saw one interval earlier, so watches and
// paged lists can resume for at least one interval.
type Compactor struct {
	client   *clientv3.Client
	interval time.Duration
	clock    clock.Clock
	logger   *slog.Logger
}

// NewCompactor returns a compactor; interval <= 0 means DefaultCompactionInterval.
func NewCompactor(client *clientv3.Client, interval time.Duration, clk clock.Clock, logger *slog.Logger) *Compactor {
	if interval <= 0 {
		interval = DefaultCompactionInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Compactor{client: client, interval: interval, clock: clk, logger: logger}
}

// CompactionState is what a compactor remembers between rounds.
type CompactionState struct {
	// KeyVersion is the version of CompactKey after the last round this compactor saw.
	KeyVersion int64
	// Revision is the store revision seen in the last round: the next round compacts to it.
	Revision int64
}

// Run compacts every interval until ctx ends.
func (c *Compactor) Run(ctx context.Context) {
	var state CompactionState
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(c.interval):
		}
		next, err := c.Compact(ctx, state)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.logger.Warn("etcd compaction failed", "revision", state.Revision, "err", err)
			continue
		}
		state = next
	}
}

// Compact runs one round: it claims this interval by bumping CompactKey's version (a transaction
// that fails if another API server already did), and the winner compacts to the revision the
// previous round saw.
func (c *Compactor) Compact(ctx context.Context, state CompactionState) (CompactionState, error) {
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(CompactKey), "=", state.KeyVersion)).
		Then(clientv3.OpPut(CompactKey, "")).
		Else(clientv3.OpGet(CompactKey)).
		Commit()
	if err != nil {
		return state, fmt.Errorf("claim compaction: %w", err)
	}
	next := CompactionState{Revision: resp.Header.Revision}
	if !resp.Succeeded {
		// Someone else compacted this interval; follow their count.
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			next.KeyVersion = kvs[0].Version
		}
		return next, nil
	}
	next.KeyVersion = state.KeyVersion + 1
	if state.Revision == 0 {
		return next, nil
	}
	if _, err := c.client.Compact(ctx, state.Revision); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return next, fmt.Errorf("compact to revision %d: %w", state.Revision, err)
	}
	c.logger.Debug("compacted etcd", "revision", state.Revision)
	return next, nil
}
