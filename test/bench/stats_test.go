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

func TestParseProcStatCPU(t *testing.T) {
	tests := []struct {
		name, line string
		want       time.Duration
		wantErr    bool
	}{
		{"plain", "4242 (skiff) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 12 0 100 0 0", 3800 * time.Millisecond, false},
		{"command with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0", 30 * time.Millisecond, false},
		{"truncated", "7 (x) R 1 2", 0, true},
		{"no command", "garbage", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStatCPU(tt.line)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseProcStatCPU = %v, %v; want %v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
