package flowcontrol

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// flowOnQueue finds a flow hash whose hand (of size hand) starts with queue q of n, so tests can
// place flows on chosen queues.
func flowOnQueue(t *testing.T, q, n, hand int) uint64 {
	t.Helper()
	for f := uint64(0); f < 100000; f++ {
		if dealHand(f, n, hand)[0] == q {
			return f
		}
	}
	t.Fatalf("no flow on queue %d", q)
	return 0
}

func TestQueueSetRejectLevel(t *testing.T) {
	qs := NewQueueSet(QueueSetConfig{Limit: 2})
	a, b, c := &Request{Seats: 1}, &Request{Seats: 1}, &Request{Seats: 1}
	for _, r := range []*Request{a, b} {
		if out, _ := qs.Enqueue(r, at(0)); out != Dispatched {
			t.Fatalf("under the limit: %v, want Dispatched", out)
		}
	}
	if out, _ := qs.Enqueue(c, at(0)); out != RejectedConcurrencyLimit {
		t.Fatalf("at the limit: %v, want RejectedConcurrencyLimit", out)
	}
	qs.Finish(a, at(1))
	if out, _ := qs.Enqueue(c, at(1)); out != Dispatched || qs.ExecutingSeats() != 2 {
		t.Fatalf("after a finish: %v with %d seats, want Dispatched with 2", out, qs.ExecutingSeats())
	}
}

func TestQueueSetQueueFullAndFIFO(t *testing.T) {
	qs := NewQueueSet(QueueSetConfig{Limit: 1, Queues: 1, HandSize: 1, QueueLengthLimit: 2})
	rs := []*Request{{Seats: 1}, {Seats: 1}, {Seats: 1}, {Seats: 1}}
	var outs []Outcome
	for _, r := range rs {
		out, _ := qs.Enqueue(r, at(0))
		outs = append(outs, out)
	}
	if want := []Outcome{Dispatched, Queued, Queued, RejectedQueueFull}; !slices.Equal(outs, want) {
		t.Fatalf("outcomes %v, want %v", outs, want)
	}
	if got := qs.Finish(rs[0], at(1)); len(got) != 1 || got[0] != rs[1] {
		t.Fatalf("finish dispatched %v, want the first queued", got)
	}
	if got := qs.Finish(rs[1], at(2)); len(got) != 1 || got[0] != rs[2] {
		t.Fatalf("finish dispatched %v, want the second queued", got)
	}
	if qs.Waiting() != 0 || qs.Executing() != 1 {
		t.Fatalf("waiting %d executing %d, want 0 and 1", qs.Waiting(), qs.Executing())
	}
}

// A flow that floods its queue does not hold back a flow that arrives later on another queue:
// the newcomer goes next, not after the flood.
func TestQueueSetFairBetweenFlows(t *testing.T) {
	cfg := QueueSetConfig{Limit: 1, Queues: 8, HandSize: 1, QueueLengthLimit: 50}
	flood, light := flowOnQueue(t, 0, 8, 1), flowOnQueue(t, 1, 8, 1)
	qs := NewQueueSet(cfg)
	var floodReqs []*Request
	for range 6 {
		r := &Request{Flow: flood, Seats: 1}
		floodReqs = append(floodReqs, r)
		qs.Enqueue(r, at(0))
	}
	lr := &Request{Flow: light, Seats: 1}
	if out, _ := qs.Enqueue(lr, at(0.5)); out != Queued {
		t.Fatalf("light request: %v, want Queued", out)
	}
	got := qs.Finish(floodReqs[0], at(1))
	if len(got) != 1 || got[0] != lr {
		t.Fatalf("after the first flood request, dispatched %v; want the light flow's request", got)
	}
	// Then the flood continues in order.
	got = qs.Finish(lr, at(1.1))
	if len(got) != 1 || got[0] != floodReqs[1] {
		t.Fatalf("then dispatched %v, want the flood's next", got)
	}
}

// Fair queuing charges seat-seconds: two flows alternate when their requests cost the same, and
// a flow whose requests take twice the seats gets about half the dispatches.
func TestQueueSetSeatSecondsShare(t *testing.T) {
	cfg := QueueSetConfig{Limit: 2, Queues: 8, HandSize: 1, QueueLengthLimit: 100}
	wide, narrow := flowOnQueue(t, 0, 8, 1), flowOnQueue(t, 1, 8, 1)
	qs := NewQueueSet(cfg)
	var running []*Request
	for range 40 {
		_, d := qs.Enqueue(&Request{Flow: wide, Seats: 2}, at(0))
		running = append(running, d...)
		_, d = qs.Enqueue(&Request{Flow: narrow, Seats: 1}, at(0))
		running = append(running, d...)
	}
	// Every executing request finishes 1 s after dispatch; count seat-seconds per flow.
	now := 0.0
	used := map[uint64]float64{}
	for step := 0; step < 30 && len(running) > 0; step++ {
		now++
		var next []*Request
		for _, r := range running {
			used[r.Flow] += float64(r.Seats)
			next = append(next, qs.Finish(r, at(now))...)
		}
		running = next
	}
	ratio := used[wide] / used[narrow]
	if ratio < 0.6 || ratio > 1.6 {
		t.Fatalf("seat-seconds wide %v narrow %v: ratio %.2f, want about 1", used[wide], used[narrow], ratio)
	}
}

func TestQueueSetWideHeadWaitsForSeats(t *testing.T) {
	qs := NewQueueSet(QueueSetConfig{Limit: 10, Queues: 1, HandSize: 1, QueueLengthLimit: 10})
	small := []*Request{{Seats: 4}, {Seats: 4}}
	for _, r := range small {
		qs.Enqueue(r, at(0))
	}
	wide := &Request{Seats: 5}
	narrow := &Request{Seats: 1}
	if out, _ := qs.Enqueue(wide, at(0)); out != Queued {
		t.Fatalf("wide request with 2 seats free: %v, want Queued", out)
	}
	if out, _ := qs.Enqueue(narrow, at(0)); out != Queued {
		t.Fatalf("narrow request behind a waiting wide one: %v, want Queued (no overtaking)", out)
	}
	got := qs.Finish(small[0], at(1))
	if len(got) != 2 || got[0] != wide || got[1] != narrow {
		t.Fatalf("after 4 seats freed dispatched %v, want wide then narrow", got)
	}
	// A request wider than the limit is capped to it.
	over := &Request{Seats: 50}
	NewQueueSet(QueueSetConfig{Limit: 3}).Enqueue(over, at(0))
	if over.Seats != 3 {
		t.Fatalf("seats %d, want capped at the limit 3", over.Seats)
	}
}

func TestQueueSetCancel(t *testing.T) {
	qs := NewQueueSet(QueueSetConfig{Limit: 1, Queues: 4, HandSize: 2, QueueLengthLimit: 5})
	a, b, c := &Request{Flow: 1, Seats: 1}, &Request{Flow: 1, Seats: 1}, &Request{Flow: 1, Seats: 1}
	qs.Enqueue(a, at(0))
	qs.Enqueue(b, at(0))
	qs.Enqueue(c, at(0))
	if qs.Cancel(a, at(1)) {
		t.Fatal("Cancel of an executing request reported it waiting")
	}
	if !qs.Cancel(b, at(1)) || qs.Waiting() != 1 {
		t.Fatalf("Cancel of a waiting request: waiting %d, want 1", qs.Waiting())
	}
	if qs.Cancel(b, at(1)) {
		t.Fatal("second Cancel reported the request waiting")
	}
	if got := qs.Finish(a, at(2)); len(got) != 1 || got[0] != c {
		t.Fatalf("after finish dispatched %v, want the request left waiting", got)
	}
}

func TestQueueSetReconfigure(t *testing.T) {
	qs := NewQueueSet(QueueSetConfig{Limit: 1, Queues: 2, HandSize: 1, QueueLengthLimit: 5})
	rs := []*Request{{Flow: 1, Seats: 1}, {Flow: 2, Seats: 1}, {Flow: 3, Seats: 1}, {Flow: 4, Seats: 1}}
	for i, r := range rs {
		qs.Enqueue(r, at(float64(i)))
	}
	if qs.Waiting() != 3 {
		t.Fatalf("waiting %d, want 3", qs.Waiting())
	}
	got := qs.Reconfigure(QueueSetConfig{Limit: 3, Queues: 16, HandSize: 4, QueueLengthLimit: 5}, at(5))
	if len(got) != 2 || qs.Waiting() != 1 || qs.ExecutingSeats() != 3 {
		t.Fatalf("after raising the limit to 3: dispatched %d, waiting %d, seats %d; want 2, 1, 3", len(got), qs.Waiting(), qs.ExecutingSeats())
	}
	// A change to Reject keeps the one still waiting until seats free up.
	qs.Reconfigure(QueueSetConfig{Limit: 3}, at(6))
	if got := qs.Finish(rs[0], at(7)); len(got) != 1 {
		t.Fatalf("after a finish under Reject, dispatched %d, want the last waiter", len(got))
	}
}

func TestQueueSetShortestQueueOfHand(t *testing.T) {
	qs := NewQueueSet(QueueSetConfig{Limit: 1, Queues: 8, HandSize: 2, QueueLengthLimit: 5})
	flow := uint64(12345)
	hand := dealHand(flow, 8, 2)
	for range 3 {
		qs.Enqueue(&Request{Flow: flow, Seats: 1}, at(0))
	}
	lengths := qs.QueueLengths()
	// One executing (charged to its queue), two waiting: the hand's queues share them.
	if lengths[hand[0]]+lengths[hand[1]] != 2 || lengths[hand[0]] == 2 || lengths[hand[1]] == 2 {
		t.Fatalf("queue lengths %v with hand %v: want the waiting requests spread over the hand", lengths, hand)
	}
}

func TestDealHand(t *testing.T) {
	for _, tc := range []struct{ deck, hand int }{{64, 8}, {8, 8}, {1, 1}, {128, 6}, {4, 9}} {
		for f := uint64(0); f < 200; f++ {
			h := dealHand(f*2654435761, tc.deck, tc.hand)
			if len(h) != min(tc.hand, tc.deck) {
				t.Fatalf("deck %d hand %d: dealt %d", tc.deck, tc.hand, len(h))
			}
			seen := map[int]bool{}
			for _, c := range h {
				if c < 0 || c >= tc.deck || seen[c] {
					t.Fatalf("deck %d: hand %v has a bad or repeated card", tc.deck, h)
				}
				seen[c] = true
			}
			if !slices.Equal(h, dealHand(f*2654435761, tc.deck, tc.hand)) {
				t.Fatal("dealing is not deterministic")
			}
		}
	}
}

// Requests dispatched before the queues were laid out anew give back the set's seats only; with
// the same layout the queues keep their accounting.
func TestQueueSetReconfigureAccounting(t *testing.T) {
	qs := NewQueueSet(QueueSetConfig{Limit: 2, Queues: 4, HandSize: 1, QueueLengthLimit: 5})
	a, b := &Request{Flow: 1, Seats: 1}, &Request{Flow: 2, Seats: 1}
	qs.Enqueue(a, at(0))
	qs.Reconfigure(QueueSetConfig{Limit: 3, Queues: 4, HandSize: 1, QueueLengthLimit: 5}, at(1))
	qs.Enqueue(b, at(1))
	qs.Reconfigure(QueueSetConfig{Limit: 3, Queues: 8, HandSize: 2, QueueLengthLimit: 5}, at(2))
	qs.Finish(a, at(3))
	qs.Finish(b, at(3))
	if qs.ExecutingSeats() != 0 || qs.Executing() != 0 {
		t.Fatalf("after both finished: %d seats, %d executing", qs.ExecutingSeats(), qs.Executing())
	}
	for i, q := range qs.queues {
		if q.executingSeats != 0 {
			t.Fatalf("queue %d has %d executing seats after everything finished", i, q.executingSeats)
		}
	}
}
