package robustness

import "math"

// settleUnknownWrites tells porcupine what the rest of the history knows of the writes whose
// answer was lost (a timeout, a broken connection). porcupine must otherwise try each of them
// at every point from its call to the end of the history, as taking effect and as not, and on a
// long run with faults hundreds of them per object outgrow any time bound (a 30-minute
// workers-pause run: 211 on one object, still undecided after 120 s). Every write puts a value
// no other write puts, so:
//
//   - a write whose value was observed (a watch event, a read, a LIST) took effect, with the
//     revision that carried the value, before the first observation returned: it becomes a write
//     that succeeded with that resourceVersion, returning then;
//   - a write whose value nobody observed, while the watch streams chained without a hole past
//     the final LIST (cov: every revision up to the end is known), never took effect: it is left
//     out, as a failed write is. Were a write to take effect unseen by every watch, reads showing
//     it would make it seen, and a conflict it caused would be left unexplained: the check
//     reports more, never less.
//
// Deletes carry no value and stay unknown; so does every write when the watches did not cover
// the run.
func settleUnknownWrites(h *History, revs revisions, cov int64) []Op {
	complete := h.Final != nil && h.Final.Outcome == OutcomeOK && cov >= h.Final.RV
	seen := firstObservations(h)
	out := make([]Op, 0, len(h.Ops))
	for _, op := range h.Ops {
		if op.Outcome != OutcomeUnknown || !op.Kind.IsWrite() || op.Kind == OpDelete || op.Value == "" {
			out = append(out, op)
			continue
		}
		at, ok := seen[keyValue{op.Key, op.Value}]
		rv := revisionOf(revs, op.Key, op.Value)
		switch {
		case ok && rv != 0:
			op.Outcome, op.RV, op.Reason = OutcomeOK, rv, op.Reason+" (settled: its value was observed)"
			op.Return = max(at, op.Call)
			out = append(out, op)
		case !ok && complete:
			// Never took effect: left out.
		default:
			out = append(out, op)
		}
	}
	return out
}

type keyValue struct{ key, value string }

// firstObservations is, for each value an object held, when it was first seen: the earliest
// return of a read or LIST that showed it, or receipt of a watch event that carried it.
func firstObservations(h *History) map[keyValue]int64 {
	out := map[keyValue]int64{}
	see := func(k, v string, at int64) {
		if v == "" {
			return
		}
		kv := keyValue{k, v}
		if old, ok := out[kv]; !ok || at < old {
			out[kv] = at
		}
	}
	for _, op := range h.Ops {
		if op.Outcome == OutcomeOK && op.Found {
			see(op.Key, op.ReadValue, op.Return)
		}
	}
	for _, w := range h.Watches {
		for _, e := range w.Events {
			if e.Type != EventBookmark && e.Type != EventDeleted {
				see(e.Key, e.Value, e.At)
			}
		}
	}
	for _, l := range allLists(h) {
		if l.Outcome != OutcomeOK {
			continue
		}
		for _, it := range l.Items {
			see(it.Key, it.Value, l.Return)
		}
	}
	return out
}

// revisionOf is the resourceVersion of the revision in which key holds value (0: none known).
func revisionOf(revs revisions, key, value string) int64 {
	rv := int64(math.MaxInt64)
	for _, r := range revs.byKey[key] {
		if !r.Deleted && r.Value == value {
			rv = min(rv, r.RV)
		}
	}
	if rv == math.MaxInt64 {
		return 0
	}
	return rv
}
