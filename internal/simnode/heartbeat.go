package simnode

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

const (
	// heartbeatSlots is how many batches one heartbeat interval's renewals are split into: 5,000
	// nodes at 10s renew 50 at a time every 100ms instead of 5,000 at once.
	heartbeatSlots = 100
	// renewConcurrency bounds the Lease writes in flight at once.
	renewConcurrency = 64
	minHeartbeatTick = time.Millisecond
)

// scheduleFirstRenewals staggers the nodes' first renewals evenly over one interval after start.
func (s *Simulator) scheduleFirstRenewals(start time.Time) {
	for i, n := range s.nodes {
		n.nextRenew = start.Add(s.stagger(i + 1)).UnixNano()
	}
}

// newHeartbeatTicker ticks heartbeatSlots times per interval.
func (s *Simulator) newHeartbeatTicker() clock.Ticker {
	return s.cfg.Clock.NewTicker(max(s.cfg.HeartbeatInterval/heartbeatSlots, minHeartbeatTick))
}

// stagger is node i's offset within an interval.
func (s *Simulator) stagger(i int) time.Duration {
	return time.Duration(int64(s.cfg.HeartbeatInterval) * int64(i) / int64(max(len(s.nodes), 1)))
}

// heartbeatLoop renews, on every tick, the Leases that have come due.
func (s *Simulator) heartbeatLoop(ctx context.Context, ticker clock.Ticker) {
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			s.renewDue(ctx)
		}
	}
}

// renewDue renews every Lease whose time has come. It scans all nodes rather than keeping them
// sorted: a comparison per node per tick is cheap next to a write per node per interval, and a
// scan cannot lose a node when renewals fall behind.
func (s *Simulator) renewDue(ctx context.Context) {
	now := s.cfg.Clock.Now()
	nowNanos := now.UnixNano()
	interval := int64(s.cfg.HeartbeatInterval)
	var due []*simNode
	for i, n := range s.nodes {
		if n.nextRenew > nowNanos {
			continue
		}
		due = append(due, n)
		n.nextRenew += interval
		if n.nextRenew <= nowNanos {
			// Far behind (a stalled process or a big clock step): restore the even spread
			// instead of renewing in a burst every tick.
			n.nextRenew = now.Add(s.stagger(i + 1)).UnixNano()
		}
	}
	if len(due) == 0 {
		return
	}
	work := make(chan *simNode)
	var wg sync.WaitGroup
	for range min(renewConcurrency, len(due)) {
		wg.Go(func() {
			for n := range work {
				if err := s.renewLease(ctx, n); err != nil && ctx.Err() == nil {
					// Retry well before the Lease expires rather than a whole interval later.
					n.nextRenew = now.Add(s.cfg.HeartbeatInterval / 10).UnixNano()
					s.cfg.Logger.Warn("simnode: lease renewal failed; will retry", "node", n.name, "err", err)
				}
			}
		})
	}
	for _, n := range due {
		work <- n
	}
	close(work)
	wg.Wait()
}
