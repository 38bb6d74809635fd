package bench

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	samples := make([]time.Duration, 0, 100)
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	tests := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"median of 1..100", samples, 50, 50 * time.Millisecond},
		{"p99 of 1..100", samples, 99, 99 * time.Millisecond},
		{"p100 is the maximum", samples, 100, 100 * time.Millisecond},
		{"single sample", []time.Duration{7}, 99, 7},
		{"empty", nil, 50, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := summarize(tt.in)
			got := s.P50
			switch tt.p {
			case 99:
				got = s.P99
			case 100:
				got = s.Max
			}
			if got != tt.want {
				t.Fatalf("p%v = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}
