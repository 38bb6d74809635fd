package request

import (
	"context"
	"sync/atomic"
	"time"
)

// SLIExclusions adds up the parts of a request's time that Kubernetes' API call latency SLI leaves
// out (apiserver_request_sli_duration_seconds): waiting in a priority-and-fairness queue and
// calling admission webhooks. The API server puts one on each request's context; the code that
// waits or calls adds to it.
type SLIExclusions struct{ nanos atomic.Int64 }

type sliKey struct{}

// WithSLIExclusions returns ctx carrying a fresh SLIExclusions, and it.
func WithSLIExclusions(ctx context.Context) (context.Context, *SLIExclusions) {
	e := &SLIExclusions{}
	return context.WithValue(ctx, sliKey{}, e), e
}

// ExcludeFromSLI adds d to the exclusions ctx carries; without any it does nothing.
func ExcludeFromSLI(ctx context.Context, d time.Duration) {
	if e, ok := ctx.Value(sliKey{}).(*SLIExclusions); ok && d > 0 {
		e.nanos.Add(int64(d))
	}
}

// Total is what was excluded so far.
func (e *SLIExclusions) Total() time.Duration {
	if e == nil {
		return 0
	}
	return time.Duration(e.nanos.Load())
}
