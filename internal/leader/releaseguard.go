package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// errNotOurs refuses a release of a Lease another candidate holds.
var errNotOurs = errors.New("the Lease is held by another candidate: not released")

// releaseGuard is a resource lock that writes a release (a record without a holder) only while
// the Lease, as last read, is this candidate's. client-go's release reads the Lease (taking its
// current resourceVersion) but decides whether it leads from the record it observed before: a
// leader resumed after a pause longer than its Lease, whose renewal ran out of time without
// reading the new holder's record, released the new holder's Lease, took it again, and two
// controller managers acted at once (a ReplicaSet one pod over its replicas, found by the
// robustness suite's workers-pause).
type releaseGuard struct {
	resourcelock.Interface
	mu sync.Mutex
	// holder is the holder of the record the last Get returned.
	holder string
	read   bool
}

func (g *releaseGuard) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := g.Interface.Get(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.read = err == nil && rec != nil
	if g.read {
		g.holder = rec.HolderIdentity
	}
	return rec, raw, err
}

func (g *releaseGuard) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	if rec.HolderIdentity == "" {
		g.mu.Lock()
		holder, read := g.holder, g.read
		g.mu.Unlock()
		if decideRelease(read, holder, g.Identity()) != releaseWrite {
			return fmt.Errorf("release of %s by %s: %w (holder %q)", g.Describe(), g.Identity(), errNotOurs, holder)
		}
	}
	return g.Interface.Update(ctx, rec)
}

// releaseDecision is whether a release may be written.
type releaseDecision int

const (
	releaseWrite releaseDecision = iota
	releaseRefuse
)

// decideRelease allows a release only of a Lease whose last read record names this candidate.
func decideRelease(read bool, holder, identity string) releaseDecision {
	if read && holder == identity {
		return releaseWrite
	}
	return releaseRefuse
}
