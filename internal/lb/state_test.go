package lb

import (
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// step is one scenario line: an event (after advancing the fake clock by wait) and, optionally,
// the plan expected right after it.
type step struct {
	wait  time.Duration
	ev    *Event
	probe []string
	close []string
	order []string
	// check says whether probe/close/order are asserted (a nil slice asserts "none").
	check bool
}

func ev(t EventType, addr string, ok bool, addrs ...string) *Event {
	return &Event{Type: t, Addr: addr, OK: ok, Addrs: addrs}
}

// timedOut is a probe of addr that had no answer in time.
func timedOut(addr string) *Event {
	return &Event{Type: EventProbe, Addr: addr, TimedOut: true}
}

func TestStateScenarios(t *testing.T) {
	const a, b, c = "10.0.0.1:6443", "10.0.0.2:6443", "10.0.0.3:6443"
	tests := []struct {
		name  string
		cfg   StateConfig
		steps []step
	}{{
		name: "seeds are probed at once and tried before anything is known",
		cfg:  StateConfig{Seeds: []string{a}},
		steps: []step{
			{check: true, probe: []string{a}, order: []string{a}},
			{check: true, order: []string{a}}, // the probe is in flight: not asked again
		},
	}, {
		name: "learned backends are probed; healthy ones go first, the seed first among equals",
		cfg:  StateConfig{Seeds: []string{b}},
		steps: []step{
			{check: true, probe: []string{b}, order: []string{b}},
			{ev: ev(EventEndpoints, "", false, a, b, c), check: true, probe: []string{a, c}, order: []string{b, a, c}},
			{ev: ev(EventProbe, a, true), check: true, order: []string{a, b, c}},
			{ev: ev(EventProbe, b, true), check: true, order: []string{b, a, c}},
			{ev: ev(EventProbe, c, false), check: true, close: []string{c}, order: []string{b, a, c}},
		},
	}, {
		name: "a failed dial demotes at once and closes the backend's connections",
		cfg:  StateConfig{Seeds: []string{a, b}},
		steps: []step{
			{check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, a, true)},
			{ev: ev(EventProbe, b, true), check: true, order: []string{a, b}},
			{ev: ev(EventDialFailed, a, false), check: true, close: []string{a}, order: []string{b, a}},
			// A second failure of a backend already down asks for nothing more.
			{ev: ev(EventDialFailed, a, false), check: true, order: []string{b, a}},
		},
	}, {
		name: "probes repeat after the interval; a failing probe closes, a passing one restores",
		cfg:  StateConfig{Seeds: []string{a, b}, ProbeInterval: time.Second},
		steps: []step{
			{check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, a, true)},
			{ev: ev(EventProbe, b, true), check: true, order: []string{a, b}},
			{wait: 500 * time.Millisecond, check: true, order: []string{a, b}},
			{wait: 500 * time.Millisecond, check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, a, false), check: true, close: []string{a}, order: []string{b, a}},
			{ev: ev(EventProbe, b, true)},
			{wait: time.Second, ev: ev(EventTick, "", false), check: true, probe: []string{a, b}, order: []string{b, a}},
			{ev: ev(EventProbe, a, true), check: true, order: []string{a, b}},
		},
	}, {
		name: "a probe that times out demotes only when the next one times out too",
		cfg:  StateConfig{Seeds: []string{a, b}, ProbeInterval: time.Second},
		steps: []step{
			{check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, a, true)},
			{ev: ev(EventProbe, b, true), check: true, order: []string{a, b}},
			// One slow /readyz: a stays healthy and keeps its connections.
			{wait: time.Second, check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: timedOut(a), check: true, order: []string{a, b}},
			{ev: ev(EventProbe, b, true)},
			// An answer in time forgets it.
			{wait: time.Second, check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, a, true)},
			{ev: ev(EventProbe, b, true)},
			{wait: time.Second, check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: timedOut(a), check: true, order: []string{a, b}},
			{ev: ev(EventProbe, b, true)},
			// Two in a row: hung or paused, not busy.
			{wait: time.Second, check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: timedOut(a), check: true, close: []string{a}, order: []string{b, a}},
		},
	}, {
		name: "an answered failure after a timeout demotes at once",
		cfg:  StateConfig{Seeds: []string{a, b}, ProbeInterval: time.Second},
		steps: []step{
			{check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, a, true)},
			{ev: ev(EventProbe, b, true), check: true, order: []string{a, b}},
			{wait: time.Second, check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: timedOut(a), check: true, order: []string{a, b}},
			{ev: ev(EventProbe, b, true)},
			{wait: time.Second, check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, a, false), check: true, close: []string{a}, order: []string{b, a}},
		},
	}, {
		name: "fall and rise counts need consecutive results",
		cfg:  StateConfig{Seeds: []string{a}, ProbeInterval: time.Second, FallCount: 2, RiseCount: 2},
		steps: []step{
			{check: true, probe: []string{a}, order: []string{a}},
			{ev: ev(EventProbe, a, true)},
			{wait: time.Second, check: true, probe: []string{a}, order: []string{a}},
			{ev: ev(EventProbe, a, true)},
			{wait: time.Second, check: true, probe: []string{a}, order: []string{a}},
			{ev: ev(EventProbe, a, false), check: true, order: []string{a}}, // one failure: still healthy
			{wait: time.Second, check: true, probe: []string{a}, order: []string{a}},
			{ev: ev(EventProbe, a, false), check: true, order: []string{a}}, // down, but the only one: connections stay
		},
	}, {
		name: "a backend leaving the endpoints is dropped and its connections closed; a seed stays",
		cfg:  StateConfig{Seeds: []string{a}},
		steps: []step{
			{ev: ev(EventEndpoints, "", false, a, b), check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, a, true)},
			{ev: ev(EventProbe, b, true)},
			{ev: ev(EventEndpoints, "", false, c), check: true, close: []string{b}, probe: []string{c}, order: []string{a, c}},
			{ev: ev(EventProbe, b, true), check: true, order: []string{a, c}}, // a late result of a dropped backend is ignored
		},
	}, {
		name: "an empty endpoint list is ignored",
		cfg:  StateConfig{Seeds: []string{a}},
		steps: []step{
			{ev: ev(EventEndpoints, "", false, a, b), check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventEndpoints, "", false), check: true, order: []string{a, b}},
		},
	}, {
		name: "when every backend is down, all are still tried, best first",
		cfg:  StateConfig{Seeds: []string{a, b}},
		steps: []step{
			{check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, b, false)},
			// Nowhere better to go: connections are left alone ...
			{ev: ev(EventProbe, a, false), check: true, order: []string{a, b}},
			// ... until a backend is healthy again; then the other's are cut.
			{wait: time.Second, ev: ev(EventTick, "", false), check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, b, true), check: true, close: []string{a}, order: []string{b, a}},
			{ev: ev(EventProbe, a, true), check: true, order: []string{a, b}},
		},
	}, {
		name: "a backend that recovers before any other is healthy keeps its connections",
		cfg:  StateConfig{Seeds: []string{a, b}},
		steps: []step{
			{check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, b, false)},
			{ev: ev(EventProbe, a, false), check: true, order: []string{a, b}},
			{wait: time.Second, ev: ev(EventTick, "", false), check: true, probe: []string{a, b}, order: []string{a, b}},
			{ev: ev(EventProbe, a, true), check: true, close: []string{b}, order: []string{a, b}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			s := NewState(tt.cfg)
			for i, st := range tt.steps {
				clk.Step(st.wait)
				if st.ev != nil {
					e := *st.ev
					e.Now = clk.Now()
					s.Step(e)
				}
				if !st.check {
					continue
				}
				rd := s.Ready(clk.Now())
				if !slices.Equal(rd.Probe, st.probe) {
					t.Errorf("step %d: probe %v, want %v", i, rd.Probe, st.probe)
				}
				if !slices.Equal(rd.Close, st.close) {
					t.Errorf("step %d: close %v, want %v", i, rd.Close, st.close)
				}
				if !slices.Equal(rd.Order, st.order) {
					t.Errorf("step %d: order %v, want %v", i, rd.Order, st.order)
				}
			}
		})
	}
}
