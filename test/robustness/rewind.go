package robustness

import (
	"fmt"
	"sort"
)

// Rewind is a restore of the store from an etcd snapshot (a cluster reset): a rewind by design.
// Writes after the snapshot's revision are gone, and the revisions they had must never name
// anything else: every resourceVersion served after the restore is above every one served before
// it (etcd's restore bumps its revision and marks the bumped range compacted, so a watch or an
// informer resuming from before the restore gets 410 and relists).
type Rewind struct {
	// SnapshotRV is the snapshot's revision: the restored store is the history replayed to it.
	SnapshotRV int64 `json:"snapshotRV"`
	// Stopped is when the node had been killed (its process reaped), Ready when it served again (ns since
	// the run's start).
	Stopped int64 `json:"stopped"`
	Ready   int64 `json:"ready"`
	// State is the test namespace's objects at SnapshotRV: an exact LIST at that revision, taken
	// before the node stopped (the same LIST is among the history's, so it is checked too).
	State []Item `json:"state"`
	// Bump is how far the restore moved the store's revision past SnapshotRV: the restored
	// store's first write is at SnapshotRV+Bump+1, so every revision up to SnapshotRV+Bump is of
	// the old store (0: not known, as in histories saved before it was recorded).
	Bump int64 `json:"bump,omitempty"`
}

// rvSpan is the range of revisions (From, To] a restore discarded; Before is the newest revision
// observed before it: a read at a revision above Before is of the restored store, where none of
// the span is (the first such read can be at the bumped revision itself, before any new write).
type rvSpan struct{ From, To, Before int64 }

func (s rvSpan) holds(rv int64) bool { return rv > s.From && rv <= s.To }

// epochs splits a history at its rewinds: epoch 0 runs until the first restore stopped the node,
// epoch i from the ith restore on.
type epochs struct {
	rewinds []Rewind
	// before[i] is the newest resourceVersion observed before rewind i stopped the node;
	// firstAfter[i] the oldest one above the snapshot's observed once the node served again (0:
	// none). The restore discarded the revisions between the snapshot's and firstAfter[i]: at
	// least up to before[i], and with etcd's bump every revision of the old store, also those of
	// objects nobody read before the stop.
	before, firstAfter []int64
}

func newEpochs(h *History) epochs {
	e := epochs{rewinds: append([]Rewind(nil), h.Rewinds...)}
	sort.Slice(e.rewinds, func(i, j int) bool { return e.rewinds[i].Stopped < e.rewinds[j].Stopped })
	for _, rw := range e.rewinds {
		var newest, first int64
		observe(h, func(rv, at int64) {
			switch {
			case at <= rw.Stopped:
				newest = max(newest, rv)
			case at > rw.Ready && rv > rw.SnapshotRV && (first == 0 || rv < first):
				first = rv
			}
		})
		e.before = append(e.before, newest)
		e.firstAfter = append(e.firstAfter, first)
	}
	return e
}

// observe calls f with every resourceVersion the history holds and when it was observed: the
// revisions of acknowledged writes and reads, watch events and bookmarks, LISTs and their items.
func observe(h *History, f func(rv, at int64)) {
	for _, op := range h.Ops {
		if op.Outcome == OutcomeOK && op.RV != 0 {
			f(op.RV, op.Return)
		}
	}
	for _, w := range h.Watches {
		for _, ev := range w.Events {
			f(ev.RV, ev.At)
		}
	}
	for _, l := range h.Lists {
		if l.Outcome != OutcomeOK {
			continue
		}
		f(l.RV, l.Return)
		for _, it := range l.Items {
			f(it.RV, l.Return)
		}
	}
}

// discarded are the revisions each restore threw away: up to the newest observed before it, and
// every one below the restored store's first. That first is the bump's when it is known; the
// oldest revision the recorded calls observed afterwards is only an upper bound of it (the
// controllers' writes, which no call observes, came first and were counted as thrown away, and
// a ReplicaSet's scale-up written after the restore then went unseen: a false surge alarm).
func (e epochs) discarded() []rvSpan {
	var out []rvSpan
	for i, rw := range e.rewinds {
		to := max(e.before[i], e.firstAfter[i]-1)
		if rw.Bump > 0 {
			to = max(e.before[i], rw.SnapshotRV+rw.Bump)
		}
		if to > rw.SnapshotRV {
			out = append(out, rvSpan{From: rw.SnapshotRV, To: to, Before: e.before[i]})
		}
	}
	return out
}

// isDiscarded says whether a restore threw away the revision rv.
func (e epochs) isDiscarded(rv int64) bool {
	for _, s := range e.discarded() {
		if s.holds(rv) {
			return true
		}
	}
	return false
}

// of is the epoch a call belongs to: the number of restores that stopped the node before it was
// made. A call of unknown outcome made before a restore and ending after the node served again
// may have reached either side; it is in both (whole says so), where the model may leave it out.
func (e epochs) of(op Op) (epoch int, whole bool) {
	for i, rw := range e.rewinds {
		switch {
		case op.Call >= rw.Stopped:
			epoch = i + 1
		case op.Outcome == OutcomeOK && op.Return > rw.Ready:
			// Sent before the stop, answered by the restored node: it reached the new store.
			epoch = i + 1
		case op.Outcome == OutcomeUnknown && op.Return > rw.Ready:
			epoch, whole = i, true
		}
	}
	return epoch, whole
}

// split groups one object's calls by epoch, for a model each: epoch 0 starts empty, epoch i from
// the object's state in rewind i's snapshot, with the floor of every revision seen before it.
func (e epochs) split(key string, ops []Op) []epochCalls {
	out := make([]epochCalls, len(e.rewinds)+1)
	out[0].init = register{}
	for i, rw := range e.rewinds {
		init := register{Floor: e.before[i]}
		for _, it := range rw.State {
			if it.Key == key {
				init = register{Exists: true, Value: it.Value, RV: it.RV, Floor: e.before[i]}
			}
		}
		out[i+1].init = init
	}
	for _, op := range ops {
		epoch, whole := e.of(op)
		out[epoch].ops = append(out[epoch].ops, op)
		if whole && epoch+1 < len(out) {
			out[epoch+1].ops = append(out[epoch+1].ops, op)
		}
	}
	return out
}

// epochCalls are one object's calls of one epoch and its state when the epoch began.
type epochCalls struct {
	init register
	ops  []Op
}

// checkRewinds: after each restore, no resourceVersion it discarded names anything again. An
// object may keep a revision up to the snapshot's (it has not changed since); a LIST's own
// revision, a write's and a watch event's are new and above every one seen before the restore.
func checkRewinds(h *History, e epochs) []Violation {
	var vs []Violation
	for i, rw := range e.rewinds {
		if e.before[i] <= rw.SnapshotRV {
			continue
		}
		reused := func(rv int64, what string) {
			if rv > rw.SnapshotRV && rv <= e.before[i] {
				vs = append(vs, Violation{Check: CheckRevision, Detail: fmt.Sprintf(
					"%s after the restore to revision %d: resourceVersion %d, which the restore discarded (%d-%d were served before it)",
					what, rw.SnapshotRV, rv, rw.SnapshotRV+1, e.before[i])})
			}
		}
		for _, op := range h.Ops {
			if op.Outcome == OutcomeOK && op.Return > rw.Ready {
				reused(op.RV, op.String())
			}
		}
		for wi, w := range h.Watches {
			for _, ev := range w.Events {
				if ev.At > rw.Ready {
					reused(ev.RV, fmt.Sprintf("watch %d (client %d) %s", wi, w.Client, ev.Type))
				}
			}
		}
		for li, l := range h.Lists {
			if l.Outcome == OutcomeOK && l.Return > rw.Ready {
				reused(l.RV, fmt.Sprintf("list %d (client %d)", li, l.Client))
			}
		}
		vs = append(vs, resumedAcross(h, rw, e.before[i])...)
	}
	return vs
}

// resumedAcross: a watch resumed after the restore from a revision it discarded must end with 410
// Gone (the client relists). Events instead would build on objects that no longer exist, and
// the gap check cannot tell: the stream may lack no revision the restored store has.
func resumedAcross(h *History, rw Rewind, before int64) []Violation {
	var vs []Violation
	for wi, w := range h.Watches {
		if w.StartRV <= rw.SnapshotRV || w.StartRV > before {
			continue
		}
		for _, ev := range w.Events {
			if ev.At > rw.Stopped {
				vs = append(vs, Violation{Check: CheckWatchGap, Key: ev.Key, Detail: fmt.Sprintf(
					"watch %d (client %d) resumed after the restore to revision %d from %d, which the restore discarded, and delivered %s@%d instead of 410 Gone",
					wi, w.Client, rw.SnapshotRV, w.StartRV, ev.Type, ev.RV)})
				break
			}
		}
	}
	return vs
}
