package robustness

import (
	"testing"
)

func opByValue(ops []Op, value string) (Op, bool) {
	for _, op := range ops {
		if op.Value == value {
			return op, true
		}
	}
	return Op{}, false
}

func TestSettleUnknownWrites(t *testing.T) {
	settle := func(h *History) []Op {
		revs, _ := buildRevisions(h)
		return settleUnknownWrites(h, revs, coverage(h))
	}

	// cleanHistory: the update to "y" lost its answer, and a watch delivered it at RV 14; the
	// create of "z" lost its answer, and nobody ever saw "z" while the watch covered the run.
	h := cleanHistory()
	h.Watches[0].Events[5].At = 19
	ops := settle(h)
	y, ok := opByValue(ops, "y")
	if !ok || y.Outcome != OutcomeOK || y.RV != 14 || y.Return != 19 {
		t.Errorf("the observed write: %+v, want ok at RV 14 returning when the watch delivered it (19)", y)
	}
	if z, ok := opByValue(ops, "z"); ok {
		t.Errorf("the write nobody saw, with every revision known, is still there: %+v", z)
	}
	if len(ops) != len(h.Ops)-1 {
		t.Errorf("%d calls after settling, want %d (one left out)", len(ops), len(h.Ops)-1)
	}

	// Without a watch reaching the final LIST, an unseen write may have taken effect unseen:
	// it stays unknown.
	h = cleanHistory()
	h.Watches = nil
	ops = settle(h)
	if z, ok := opByValue(ops, "z"); !ok || z.Outcome != OutcomeUnknown {
		t.Errorf("the unseen write with the watches not covering the run: %+v, %v; want it unknown", z, ok)
	}
	// "y" is still known from the final LIST, returned at 31.
	if y, _ := opByValue(ops, "y"); y.Outcome != OutcomeOK || y.RV != 14 || y.Return != 31 {
		t.Errorf("the write the final LIST shows: %+v, want ok at RV 14 returning at 31", y)
	}

	// An observation before the call (clocks of two hosts) does not make the call end before it
	// began.
	h = cleanHistory()
	h.Watches[0].Events[5].At = 3
	if y, _ := opByValue(settle(h), "y"); y.Return != y.Call {
		t.Errorf("settled write returns at %d before its call at %d", y.Return, y.Call)
	}
}

// Settling never hides a write that took effect where it should not have: an update of unknown
// outcome whose precondition no longer held, seen afterwards, has no linearization.
func TestSettledWriteStillCaughtWhenImpossible(t *testing.T) {
	h := &History{
		StartRV: 9,
		Ops: []Op{
			{Client: 0, Kind: OpCreate, Key: "k0", Value: "a", Call: 0, Return: 5, Outcome: OutcomeOK, RV: 10},
			{Client: 0, Kind: OpUpdate, Key: "k0", Value: "b", Precondition: 10, Call: 6, Return: 8, Outcome: OutcomeOK, RV: 11},
			// Demands RV 10, which was gone at 8, and still landed.
			{Client: 1, Kind: OpUpdate, Key: "k0", Value: "c", Precondition: 10, Call: 9, Return: 12, Outcome: OutcomeUnknown, Reason: "timeout"},
		},
		Watches: []Watch{{Client: 2, StartRV: 9, Events: []Event{
			{Type: EventAdded, Key: "k0", Value: "a", RV: 10, At: 4},
			{Type: EventModified, Key: "k0", Value: "b", RV: 11, At: 7},
			{Type: EventModified, Key: "k0", Value: "c", RV: 12, At: 20},
		}}},
		Final: &List{Call: 30, Return: 31, Outcome: OutcomeOK, RV: 12, Items: []Item{{Key: "k0", Value: "c", RV: 12}}},
	}
	r := Check(h, CheckOptions{})
	found := false
	for _, v := range r.Violations {
		if v.Check == CheckLinearizable {
			found = true
		}
	}
	if !found {
		t.Fatalf("a compare-and-set that landed past its precondition passed: %v", r.Violations)
	}
}
