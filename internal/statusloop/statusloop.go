package statusloop

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
)

// Kick wakes Run. Wake never blocks: one pending pass covers any number of changes.
type Kick chan struct{}

// NewKick is a Kick with room for the one pending pass.
func NewKick() Kick { return make(Kick, 1) }

// Wake asks for a pass unless one is pending already.
func (k Kick) Wake() {
	select {
	case k <- struct{}{}:
	default:
	}
}

// Run calls pass at each kick, and once more retry after a pass that returned an error, until ctx
// ends.
func Run(ctx context.Context, clk clock.Clock, kick Kick, retry time.Duration, pass func(context.Context) error) {
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-again:
		}
		again = nil
		if err := pass(ctx); err != nil && ctx.Err() == nil {
			again = clk.After(retry)
		}
	}
}

// NeedsRetry reports whether a status write's error calls for another pass: not when it
// succeeded, met a conflict or found the object gone (each brings an informer event of its own),
// nor when ctx ended.
func NeedsRetry(ctx context.Context, err error) bool {
	return err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil
}
