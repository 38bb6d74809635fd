package framework

import (
	"context"
	"sync"
	"sync/atomic"
)

// Parallelizer runs independent pieces of work on a bounded set of workers.
type Parallelizer struct {
	workers int
}

// NewParallelizer returns a parallelizer with at most workers goroutines.
func NewParallelizer(workers int) Parallelizer {
	if workers < 1 {
		workers = 1
	}
	return Parallelizer{workers: workers}
}

// Until runs do(i) for i in [0, pieces) and returns when all finished or ctx is done.
func (p Parallelizer) Until(ctx context.Context, pieces int, do func(i int)) {
	if pieces <= 0 {
		return
	}
	workers := min(p.workers, pieces)
	if workers == 1 {
		for i := 0; i < pieces && ctx.Err() == nil; i++ {
			do(i)
		}
		return
	}
	// Small chunks balance load without one atomic op per cheap piece.
	chunk := max(1, pieces/(workers*4))
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := int(next.Add(int64(chunk))) - chunk
				if start >= pieces {
					return
				}
				for i := start; i < min(start+chunk, pieces); i++ {
					do(i)
				}
			}
		}()
	}
	wg.Wait()
}
