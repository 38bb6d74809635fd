package cluster

import (
	"io"
	"log/slog"
	"math"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "", want: MemoryLimitOff},
		{in: "off", want: MemoryLimitOff},
		{in: "none", want: MemoryLimitOff},
		{in: "1Gi", want: 1 << 30},
		{in: "900Mi", want: 900 << 20},
		{in: "1G", want: 1e9},
		{in: "0", wantErr: true},
		{in: "-1Gi", wantErr: true},
		{in: "lots", wantErr: true},
	} {
		got, err := ParseMemoryLimit(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseMemoryLimit(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && got != tc.want {
			t.Errorf("ParseMemoryLimit(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestPlanMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured int64
		env        string
		want       memoryLimitPlan
	}{
		{name: "nothing set", configured: 0, want: memoryLimitPlan{Source: "none"}},
		{name: "off", configured: MemoryLimitOff, want: memoryLimitPlan{Source: "none"}},
		{name: "flag", configured: 1 << 30, want: memoryLimitPlan{Set: true, Limit: 1 << 30, Source: "--memory-limit"}},
		{name: "flag wins over the environment", configured: 1 << 30, env: "2GiB", want: memoryLimitPlan{Set: true, Limit: 1 << 30, Source: "--memory-limit"}},
		{name: "environment kept", configured: MemoryLimitOff, env: "2GiB", want: memoryLimitPlan{Source: "GOMEMLIMIT"}},
		{name: "environment off", env: "off", want: memoryLimitPlan{Source: "none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := planMemoryLimit(tc.configured, tc.env); got != tc.want {
				t.Errorf("planMemoryLimit(%d, %q) = %+v, want %+v", tc.configured, tc.env, got, tc.want)
			}
		})
	}
}

// fakeLimit stands in for debug.SetMemoryLimit: a negative value reads, anything else sets and
// returns the previous limit.
type fakeLimit struct {
	limit int64
	sets  []int64
}

func (f *fakeLimit) set(v int64) int64 {
	prev := f.limit
	if v >= 0 {
		f.limit = v
		f.sets = append(f.sets, v)
	}
	return prev
}

func TestApplyMemoryLimit(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Run("set", func(t *testing.T) {
		f := &fakeLimit{limit: math.MaxInt64}
		applyMemoryLimit(planMemoryLimit(900<<20, ""), f.set, log)
		if f.limit != 900<<20 || len(f.sets) != 1 {
			t.Errorf("limit %d after %v, want 900Mi set once", f.limit, f.sets)
		}
	})
	t.Run("left alone", func(t *testing.T) {
		f := &fakeLimit{limit: 2 << 30} // as the runtime would have it from GOMEMLIMIT
		applyMemoryLimit(planMemoryLimit(MemoryLimitOff, "2GiB"), f.set, log)
		if f.limit != 2<<30 || len(f.sets) != 0 {
			t.Errorf("limit %d after %v, want 2Gi untouched", f.limit, f.sets)
		}
	})
}
