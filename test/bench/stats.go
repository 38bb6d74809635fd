package bench

import (
	"slices"
	"strconv"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of sorted samples by the nearest-rank method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.999999) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

// latencySummary sorts samples and summarises them.
type latencySummary struct {
	Count         int
	P50, P99, Max time.Duration
}

func summarize(samples []time.Duration) latencySummary {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	s := latencySummary{Count: len(sorted), P50: percentile(sorted, 50), P99: percentile(sorted, 99)}
	if len(sorted) > 0 {
		s.Max = sorted[len(sorted)-1]
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// ms formats a duration in milliseconds with enough precision for sub-millisecond figures.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64)
}

// Percentiles are the p50, p99 and max of samples, for benchmarks outside this package.
func Percentiles(samples []time.Duration) (p50, p99, maxLatency time.Duration) {
	s := summarize(samples)
	return s.P50, s.P99, s.Max
}
