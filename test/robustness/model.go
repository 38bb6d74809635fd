package robustness

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// register is the model's state of one object: whether it exists, its value and resourceVersion
// (0 while unknown: after a write of unknown outcome, or after a delete), and Floor, the newest
// resourceVersion the object has had, which every later write's must exceed (revisions only grow).
type register struct {
	Exists bool
	Value  string
	RV     int64
	Floor  int64
}

func (s register) String() string {
	if !s.Exists {
		return fmt.Sprintf("absent (floor %d)", s.Floor)
	}
	return fmt.Sprintf("%s@%d (floor %d)", s.Value, s.RV, s.Floor)
}

// rvMatches says whether the object's resourceVersion can be rv: equal, or unknown and newer than
// the floor.
func (s register) rvMatches(rv int64) bool {
	if s.RV != 0 {
		return s.RV == rv
	}
	return rv > s.Floor
}

// written is the state after a write of value acknowledged at rv (0: outcome unknown).
func (s register) written(value string, rv int64) register {
	if rv == 0 {
		return register{Exists: true, Value: value, Floor: s.Floor}
	}
	return register{Exists: true, Value: value, RV: rv, Floor: rv}
}

// registerModelFrom is the per-object model: a register with a resourceVersion, compare-and-set by
// precondition. It is nondeterministic only for calls of unknown outcome, which may or may not
// have happened (porcupine's way: they never return, so they can linearize anywhere after their
// invocation, or nowhere).
//
// init is the object's state where its history starts: absent, or after a restore from a
// snapshot the snapshot's object, with the floor of every revision served before.
func registerModelFrom(init register) porcupine.Model {
	m := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{init} },
		Step: func(state, input, _ interface{}) []interface{} {
			op := input.(Op)
			return stepRegister(state.(register), op)
		},
		Equal: func(a, b interface{}) bool { return a.(register) == b.(register) },
		DescribeOperation: func(input, _ interface{}) string {
			return input.(Op).String()
		},
		DescribeState: func(state interface{}) string { return state.(register).String() },
	}
	return m.ToModel()
}

// stepRegister is the model's transition: the states op can lead to from s (none: op cannot
// happen in s).
func stepRegister(s register, op Op) []interface{} {
	switch op.Outcome {
	case OutcomeUnknown:
		// Not applied, or applied with an unknown resourceVersion.
		out := []interface{}{s}
		if next, ok := applyWrite(s, op, 0); ok {
			out = append(out, next)
		}
		return out
	case OutcomeFailed:
		if failureFits(s, op) {
			return []interface{}{s}
		}
		return nil
	}
	if op.Kind == OpGet {
		return readStep(s, op)
	}
	if op.RV != 0 && op.RV <= s.Floor {
		return nil
	}
	if next, ok := applyWrite(s, op, op.RV); ok {
		return []interface{}{next}
	}
	return nil
}

// readStep accepts a quorum read that returns the current value; it learns the resourceVersion
// when the state did not know it.
func readStep(s register, op Op) []interface{} {
	if !op.Found {
		if s.Exists {
			return nil
		}
		return []interface{}{s}
	}
	if !s.Exists || s.Value != op.ReadValue || !s.rvMatches(op.RV) {
		return nil
	}
	return []interface{}{register{Exists: true, Value: s.Value, RV: op.RV, Floor: max(s.Floor, op.RV)}}
}

// applyWrite is the state after op succeeded at rv (0: unknown), or false when op could not
// succeed in s.
func applyWrite(s register, op Op, rv int64) (register, bool) {
	switch op.Kind {
	case OpCreate:
		if s.Exists {
			return s, false
		}
		return s.written(op.Value, rv), true
	case OpUpdate:
		if !s.Exists || !s.rvMatches(op.Precondition) {
			return s, false
		}
		s.Floor = max(s.Floor, op.Precondition)
		return s.written(op.Value, rv), true
	case OpApply:
		return s.written(op.Value, rv), true
	case OpDelete:
		if !s.Exists || (op.Precondition != 0 && !s.rvMatches(op.Precondition)) {
			return s, false
		}
		return register{Floor: max(s.Floor, s.RV, op.Precondition, rv)}, true
	}
	// Reads of unknown outcome change nothing.
	return s, op.Kind == OpGet
}

// failureFits says whether a definite failure is one the state explains: AlreadyExists needs the
// object, NotFound its absence, Conflict a resourceVersion other than the precondition. Other
// definite failures (throttling, a refused connection) say nothing about the object.
func failureFits(s register, op Op) bool {
	switch metav1.StatusReason(op.Reason) {
	case metav1.StatusReasonAlreadyExists:
		return op.Kind != OpCreate || s.Exists
	case metav1.StatusReasonNotFound:
		return !s.Exists
	case metav1.StatusReasonConflict:
		if op.Kind == OpCreate {
			return s.Exists
		}
		return !s.Exists || s.RV == 0 || s.RV != op.Precondition
	}
	return true
}

// LinearizabilityResult is porcupine's verdict on one object.
type LinearizabilityResult struct {
	Key string
	// Epoch counts the restores from a snapshot before these calls; Init is the object's state
	// when the epoch began.
	Epoch  int
	Init   register
	Result porcupine.CheckResult
	Info   porcupine.LinearizationInfo
	Ops    int
}

// porcupineOps turns the recorded calls on one object into porcupine's operations: a call of
// unknown outcome never returns, reads served from the cache and reads that failed are left out
// (they promise nothing).
func porcupineOps(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		if op.Kind == OpGetCached || (op.Kind == OpGet && op.Outcome != OutcomeOK) {
			continue
		}
		ret := op.Return
		if op.Outcome == OutcomeUnknown {
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op, Call: op.Call, Output: op, Return: ret})
	}
	return out
}

// opsByKey groups the calls by object, keys sorted.
func opsByKey(ops []Op) ([]string, map[string][]Op) {
	byKey := map[string][]Op{}
	for _, op := range ops {
		byKey[op.Key] = append(byKey[op.Key], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, byKey
}
