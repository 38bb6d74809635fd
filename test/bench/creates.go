package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// CreateOptions configure one create measurement.
type CreateOptions struct {
	Concurrency  int
	Duration     time.Duration
	ContentType  string // "" (JSON) or ContentTypeProtobuf
	Namespace    string
	PayloadBytes int
	// NamePrefix keeps names of separate runs in one namespace apart.
	NamePrefix string
	// ServerCPU, when set, reads the server's CPU time so the result can show CPU per create.
	ServerCPU func() (time.Duration, error)
}

// CreateResult is what one create measurement observed.
type CreateResult struct {
	Concurrency int
	Encoding    string
	Creates     int
	Errors      int
	FirstError  error
	Elapsed     time.Duration
	PerSecond   float64
	Latency     latencySummary
	ServerCPU   time.Duration
}

// RunCreates creates ConfigMaps from Concurrency workers for Duration, each worker issuing its next
// create as soon as the previous one is acknowledged.
func RunCreates(ctx context.Context, cfg *rest.Config, opts CreateOptions) (CreateResult, error) {
	res := CreateResult{Concurrency: opts.Concurrency, Encoding: contentTypeName(opts.ContentType)}
	cs, err := clientFor(cfg, opts.ContentType)
	if err != nil {
		return res, err
	}
	if err := ensureNamespace(ctx, cs, opts.Namespace); err != nil {
		return res, err
	}
	type workerResult struct {
		latencies []time.Duration
		errors    int
		firstErr  error
	}
	results := make([]workerResult, opts.Concurrency)
	cpuBefore, err := readCPU(opts.ServerCPU)
	if err != nil {
		return res, err
	}
	start := time.Now()
	deadline := start.Add(opts.Duration)
	var wg sync.WaitGroup
	for w := range opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[w]
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				cm := configMap(opts.Namespace, fmt.Sprintf("%s-w%d-%d", opts.NamePrefix, w, i), opts.PayloadBytes)
				t0 := time.Now()
				_, err := cs.CoreV1().ConfigMaps(opts.Namespace).Create(ctx, cm, metav1.CreateOptions{})
				if err != nil {
					r.errors++
					if r.firstErr == nil {
						r.firstErr = err
					}
					continue
				}
				r.latencies = append(r.latencies, time.Since(t0))
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	cpuAfter, err := readCPU(opts.ServerCPU)
	if err != nil {
		return res, err
	}
	res.ServerCPU = cpuAfter - cpuBefore
	var all []time.Duration
	for _, r := range results {
		all = append(all, r.latencies...)
		res.Errors += r.errors
		if res.FirstError == nil {
			res.FirstError = r.firstErr
		}
	}
	res.Creates = len(all)
	res.PerSecond = float64(res.Creates) / res.Elapsed.Seconds()
	res.Latency = summarize(all)
	return res, ctx.Err()
}
