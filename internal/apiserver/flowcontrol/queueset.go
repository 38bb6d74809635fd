package flowcontrol

import (
	"hash/fnv"
	"time"
)

// QueueSetConfig is one priority level's share of the server and how it waits.
type QueueSetConfig struct {
	// Limit is the level's concurrency limit in seats (at least 1).
	Limit int
	// Queues, HandSize and QueueLengthLimit are the level's queuing; Queues 0 means
	// limitResponse Reject: a request that does not fit at once is refused.
	Queues, HandSize, QueueLengthLimit int
}

// Outcome is what Enqueue decided for a request.
type Outcome int

const (
	// Dispatched: the request holds its seats and runs now.
	Dispatched Outcome = iota
	// Queued: the request waits in a queue until Finish or Reconfigure dispatches it, or Cancel
	// takes it out.
	Queued
	// RejectedQueueFull: the shortest queue of the request's hand was full.
	RejectedQueueFull
	// RejectedConcurrencyLimit: a Reject level is at its limit.
	RejectedConcurrencyLimit
)

// Request is one request's place in a QueueSet.
type Request struct {
	// Flow identifies the request's flow (see FlowHash); requests of one flow share a hand of queues.
	Flow uint64
	// Seats is how much of the level's limit the request occupies while it runs (at least 1).
	Seats int

	queue int
	// gen is the queue layout the request was dispatched in (see QueueSet.gen).
	gen        int
	arrived    time.Time
	dispatched time.Time
	state      requestState
}

type requestState int

const (
	stateNew requestState = iota
	stateWaiting
	stateExecuting
	stateDone
)

// Executing reports whether the request has been dispatched and not finished.
func (r *Request) Executing() bool { return r.state == stateExecuting }

// Dispatched is when the request was dispatched (zero while it waits).
func (r *Request) Dispatched() time.Time { return r.dispatched }

// Arrived is when the request was enqueued.
func (r *Request) Arrived() time.Time { return r.arrived }

type queue struct {
	waiting []*Request
	// executingSeats is the seats of this queue's dispatched, unfinished requests.
	executingSeats int
	// nextStart is the virtual start tag of the queue's next dispatch (start-time fair queuing):
	// each dispatch advances it by the request's seats times the estimated service time, and
	// Finish corrects the estimate with the time the request really took.
	nextStart float64
}

// QueueSet is the queuing state of one Limited priority level. It is a pure state machine: the
// caller passes the time in, applies the outcomes (wakes dispatched requests, answers rejected
// ones) and serialises calls.
//
// Dispatch is start-time fair queuing on seat-seconds between queues: the non-empty queue with
// the smallest virtual start tag goes next; a queue that was idle starts at the set's current
// virtual time, so it neither loses nor banks credit. A head request wider than the free seats
// blocks dispatch until seats free up (wide requests are not starved by narrow ones).
type QueueSet struct {
	cfg            QueueSetConfig
	queues         []*queue
	executingSeats int
	executing      int
	waiting        int
	// vnow is the system virtual time: the largest start tag dispatched so far.
	vnow float64
	// rr breaks ties between queues with equal start tags in turn.
	rr int
	// gen counts queue layouts: a request dispatched under an older layout gives back only the
	// set's seats when it finishes, not those of a queue that no longer exists.
	gen int
}

// serviceEstimate is the service time assumed at dispatch, in seconds; Finish corrects it.
const serviceEstimate = 1.0

// NewQueueSet returns an empty queue set.
func NewQueueSet(cfg QueueSetConfig) *QueueSet {
	qs := &QueueSet{}
	qs.setConfig(cfg)
	return qs
}

func (qs *QueueSet) setConfig(cfg QueueSetConfig) {
	cfg.Limit = max(cfg.Limit, 1)
	if cfg.Queues > 0 {
		cfg.HandSize = min(max(cfg.HandSize, 1), cfg.Queues)
		cfg.QueueLengthLimit = max(cfg.QueueLengthLimit, 1)
	}
	same := qs.queues != nil && cfg.Queues == qs.cfg.Queues && cfg.HandSize == qs.cfg.HandSize
	qs.cfg = cfg
	if same {
		// The same queues: flows keep their hands and queues their fair-queuing state.
		return
	}
	qs.gen++
	n := max(cfg.Queues, 1) // a Reject level keeps one queue for requests left waiting by a change
	qs.queues = make([]*queue, n)
	for i := range qs.queues {
		qs.queues[i] = &queue{nextStart: qs.vnow}
	}
}

// Config is the set's configuration.
func (qs *QueueSet) Config() QueueSetConfig { return qs.cfg }

// Waiting is the number of queued requests.
func (qs *QueueSet) Waiting() int { return qs.waiting }

// Executing is the number of dispatched, unfinished requests.
func (qs *QueueSet) Executing() int { return qs.executing }

// ExecutingSeats is the seats those hold.
func (qs *QueueSet) ExecutingSeats() int { return qs.executingSeats }

// QueueLengths is the number of requests waiting in each queue (for tests and debugging).
func (qs *QueueSet) QueueLengths() []int {
	out := make([]int, len(qs.queues))
	for i, q := range qs.queues {
		out[i] = len(q.waiting)
	}
	return out
}

// Enqueue admits r: dispatched at once, queued, or rejected. It returns the outcome for r and
// every request it dispatched (r among them when Dispatched; with queuing, others may go first).
func (qs *QueueSet) Enqueue(r *Request, now time.Time) (Outcome, []*Request) {
	r.Seats = min(max(r.Seats, 1), qs.cfg.Limit)
	r.arrived = now
	if qs.cfg.Queues == 0 {
		if qs.executingSeats+r.Seats > qs.cfg.Limit {
			r.state = stateDone
			return RejectedConcurrencyLimit, nil
		}
		r.queue = 0
		qs.dispatch(qs.queues[0], r, now)
		return Dispatched, []*Request{r}
	}
	q := qs.chooseQueue(r.Flow)
	if len(qs.queues[q].waiting) >= qs.cfg.QueueLengthLimit {
		r.state = stateDone
		return RejectedQueueFull, nil
	}
	r.queue = q
	qq := qs.queues[q]
	if len(qq.waiting) == 0 && qq.nextStart < qs.vnow {
		qq.nextStart = qs.vnow
	}
	qq.waiting = append(qq.waiting, r)
	r.state = stateWaiting
	qs.waiting++
	dispatched := qs.dispatchAll(now)
	if r.state == stateExecuting {
		return Dispatched, dispatched
	}
	return Queued, dispatched
}

// Finish ends an executing request, frees its seats and returns the requests dispatched into them.
func (qs *QueueSet) Finish(r *Request, now time.Time) []*Request {
	if r.state != stateExecuting {
		return nil
	}
	r.state = stateDone
	qs.executing--
	qs.executingSeats -= r.Seats
	if r.gen == qs.gen {
		q := qs.queues[r.queue]
		q.executingSeats -= r.Seats
		// Replace the estimate charged at dispatch by the seat-seconds really used.
		q.nextStart += float64(r.Seats) * (now.Sub(r.dispatched).Seconds() - serviceEstimate)
	}
	return qs.dispatchAll(now)
}

// Cancel takes a waiting request out of its queue (its wait timed out or its client left) and
// reports whether it was waiting; false means it was already dispatched (the caller then runs it
// and calls Finish) or already done.
func (qs *QueueSet) Cancel(r *Request, now time.Time) bool {
	if r.state != stateWaiting {
		return false
	}
	q := qs.queues[r.queue]
	for i, w := range q.waiting {
		if w == r {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			break
		}
	}
	r.state = stateDone
	qs.waiting--
	return true
}

// Reconfigure applies a new configuration and returns the requests it let dispatch. With the same
// queues and hand size, everything stays in place and only the limits change; otherwise the
// waiting requests are dealt again onto the new queues in arrival order (no length limit applied
// to them). Executing requests keep their seats.
func (qs *QueueSet) Reconfigure(cfg QueueSetConfig, now time.Time) []*Request {
	var waiting []*Request
	for _, q := range qs.queues {
		waiting = append(waiting, q.waiting...)
	}
	// Arrival order, stable.
	for i := 1; i < len(waiting); i++ {
		for j := i; j > 0 && waiting[j].arrived.Before(waiting[j-1].arrived); j-- {
			waiting[j], waiting[j-1] = waiting[j-1], waiting[j]
		}
	}
	gen := qs.gen
	qs.setConfig(cfg)
	if qs.gen == gen {
		for _, r := range waiting {
			r.Seats = min(r.Seats, qs.cfg.Limit)
		}
		return qs.dispatchAll(now)
	}
	for _, r := range waiting {
		q := 0
		if cfg.Queues > 0 {
			q = qs.chooseQueue(r.Flow)
		}
		r.queue = q
		r.Seats = min(r.Seats, qs.cfg.Limit)
		qs.queues[q].waiting = append(qs.queues[q].waiting, r)
	}
	return qs.dispatchAll(now)
}

// chooseQueue deals the flow's hand of HandSize queues and picks the one with the fewest seats
// waiting and executing (the lowest index on ties).
func (qs *QueueSet) chooseQueue(flow uint64) int {
	best, bestLoad := -1, 0
	for _, q := range dealHand(flow, len(qs.queues), qs.cfg.HandSize) {
		load := qs.queues[q].executingSeats
		for _, w := range qs.queues[q].waiting {
			load += w.Seats
		}
		if best < 0 || load < bestLoad || (load == bestLoad && q < best) {
			best, bestLoad = q, load
		}
	}
	return best
}

// dispatchAll dispatches queue heads, fairest first, while their seats fit.
func (qs *QueueSet) dispatchAll(now time.Time) []*Request {
	var out []*Request
	for qs.waiting > 0 {
		q := qs.nextQueue()
		if q == nil {
			break
		}
		head := q.waiting[0]
		if qs.executingSeats > 0 && qs.executingSeats+head.Seats > qs.cfg.Limit {
			break
		}
		q.waiting = q.waiting[1:]
		qs.waiting--
		qs.vnow = max(qs.vnow, q.nextStart)
		q.nextStart += float64(head.Seats) * serviceEstimate
		qs.dispatch(q, head, now)
		out = append(out, head)
	}
	return out
}

func (qs *QueueSet) dispatch(q *queue, r *Request, now time.Time) {
	r.state = stateExecuting
	r.gen = qs.gen
	r.dispatched = now
	q.executingSeats += r.Seats
	qs.executingSeats += r.Seats
	qs.executing++
}

// nextQueue is the non-empty queue with the smallest start tag, ties broken round-robin.
func (qs *QueueSet) nextQueue() *queue {
	n := len(qs.queues)
	var best *queue
	bestIdx := 0
	for k := range n {
		i := (qs.rr + k) % n
		q := qs.queues[i]
		if len(q.waiting) == 0 {
			continue
		}
		if best == nil || q.nextStart < best.nextStart {
			best, bestIdx = q, i
		}
	}
	if best != nil {
		qs.rr = (bestIdx + 1) % n
	}
	return best
}

// dealHand deals handSize distinct queues out of deck from the flow's hash, as shuffle sharding
// does: the hash is read as digits in a mixed radix (deck, deck-1, ...), each picking one of the
// cards not yet dealt.
func dealHand(hash uint64, deck, handSize int) []int {
	handSize = min(max(handSize, 1), deck)
	cards := make([]int, deck)
	for i := range cards {
		cards[i] = i
	}
	hand := make([]int, handSize)
	for i := range handSize {
		left := uint64(deck - i)
		j := i + int(hash%left)
		hash /= left
		cards[i], cards[j] = cards[j], cards[i]
		hand[i] = cards[i]
	}
	return hand
}

// FlowHash is the flow identity of a request: its FlowSchema's name and its distinguisher.
func FlowHash(schema, distinguisher string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(schema))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(distinguisher))
	return h.Sum64()
}
