package robustness

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// The checks a Violation can come from.
const (
	CheckLinearizable = "linearizable"  // (1) per-object linearizability
	CheckWatchOrder   = "watch-order"   // (2) increasing RV, no duplicates, bookmarks never back
	CheckWatchGap     = "watch-gap"     // (2) a known revision in the stream's range is missing
	CheckList         = "list"          // (3) a LIST differs from the history replayed to its RV
	CheckConsistent   = "consistent"    // (3) a consistent LIST older than an acknowledged write
	CheckRevision     = "revision"      // two observations claim different things at one RV
	CheckPhantom      = "phantom"       // (4) a value no write carried, or a failed write's value
	CheckLostWrite    = "lost-write"    // (4) an acknowledged write missing from the final state
	CheckInformer     = "informer"      // (5) an informer's cache differs from the final state
	CheckIncomplete   = "check-timeout" // porcupine could not decide in time
)

// Violation is one broken promise.
type Violation struct {
	Check  string `json:"check"`
	Key    string `json:"key,omitempty"`
	Detail string `json:"detail"`
}

func (v Violation) String() string {
	if v.Key == "" {
		return v.Check + ": " + v.Detail
	}
	return fmt.Sprintf("%s %s: %s", v.Check, v.Key, v.Detail)
}

// Report is the verdict on a History.
type Report struct {
	Violations []Violation
	// Linearizability holds porcupine's result per object, for the visualization of a failure.
	Linearizability                     []LinearizabilityResult
	Ops, Writes, Events, Lists, Watches int
	// Objects counts the recorded versions of control-plane objects.
	Objects int
	// Discarded counts the acknowledged writes a restore from a snapshot threw away, by design.
	Discarded int
}

// CheckOptions bound the checks.
type CheckOptions struct {
	// LinearizabilityTimeout bounds porcupine per object (0: no bound).
	LinearizabilityTimeout time.Duration
}

// Check runs every check on h.
func Check(h *History, opt CheckOptions) Report {
	r := Report{Ops: len(h.Ops), Lists: len(h.Lists), Watches: len(h.Watches), Objects: len(h.Objects)}
	for _, op := range h.Ops {
		if op.Kind.IsWrite() {
			r.Writes++
		}
	}
	for _, w := range h.Watches {
		r.Events += len(w.Events)
	}
	ep := newEpochs(h)
	revs, vs := buildRevisions(h)
	revs.discarded = ep.discarded()
	cov := coverage(h)
	r.Linearizability, r.Violations = checkLinearizable(settleUnknownWrites(h, revs, cov), ep, opt)
	r.Violations = append(r.Violations, vs...)
	r.Violations = append(r.Violations, checkRewinds(h, ep)...)
	r.Violations = append(r.Violations, checkPhantoms(h)...)
	for i, w := range h.Watches {
		r.Violations = append(r.Violations, checkWatchOrder(i, w)...)
		r.Violations = append(r.Violations, checkWatchGaps(i, w, revs)...)
	}
	lists := h.Lists
	if h.Final != nil {
		lists = append(append([]List(nil), lists...), *h.Final)
	}
	for i, l := range lists {
		if l.Outcome != OutcomeOK {
			continue
		}
		r.Violations = append(r.Violations, checkList(i, l, h, revs, cov)...)
	}
	r.Violations = append(r.Violations, checkFinal(h, ep)...)
	r.Violations = append(r.Violations, checkWatchProgress(h, ep)...)
	r.Violations = append(r.Violations, CheckControlPlane(h)...)
	for _, op := range h.Ops {
		if op.Kind.IsWrite() && op.Outcome == OutcomeOK && ep.isDiscarded(op.RV) {
			r.Discarded++
		}
	}
	return r
}

// checkLinearizable runs porcupine on each object's calls, epoch by epoch (a restore from a
// snapshot starts a new one from the snapshot's state).
func checkLinearizable(ops []Op, ep epochs, opt CheckOptions) ([]LinearizabilityResult, []Violation) {
	var results []LinearizabilityResult
	var vs []Violation
	keys, byKey := opsByKey(ops)
	for _, k := range keys {
		for epoch, calls := range ep.split(k, byKey[k]) {
			if len(calls.ops) == 0 {
				continue
			}
			res, info := porcupine.CheckOperationsVerbose(registerModelFrom(calls.init), porcupineOps(calls.ops), opt.LinearizabilityTimeout)
			results = append(results, LinearizabilityResult{Key: k, Epoch: epoch, Init: calls.init, Result: res, Info: info, Ops: len(calls.ops)})
			where := ""
			if len(ep.rewinds) > 0 {
				where = fmt.Sprintf(" of epoch %d (from %s)", epoch, calls.init)
			}
			switch res {
			case porcupine.Illegal:
				vs = append(vs, Violation{Check: CheckLinearizable, Key: k, Detail: fmt.Sprintf("the %d calls on the object%s have no linearization", len(calls.ops), where)})
			case porcupine.Unknown:
				vs = append(vs, Violation{Check: CheckIncomplete, Key: k, Detail: "porcupine timed out" + where})
			}
		}
	}
	return results, vs
}

// checkWatchProgress: once traffic stopped, every watcher caught up with the last acknowledged
// write (a stream that delivers nothing vouches for nothing, so without this a watcher stuck
// after a restart would pass). Watchers are the clients that ran streams.
func checkWatchProgress(h *History, ep epochs) []Violation {
	if h.Final == nil {
		return nil
	}
	var last Op
	for _, op := range h.Ops {
		if op.Kind.IsWrite() && op.Outcome == OutcomeOK && op.RV > last.RV && !ep.isDiscarded(op.RV) {
			last = op
		}
	}
	reached := map[int]int64{}
	for _, w := range h.Watches {
		reached[w.Client] = max(reached[w.Client], streamEnd(w))
	}
	var vs []Violation
	for _, client := range sortedClients(reached) {
		if reached[client] < last.RV {
			vs = append(vs, Violation{Check: CheckWatchGap, Key: last.Key, Detail: fmt.Sprintf("client %d's watch stopped at %d, before the last acknowledged write %s", client, reached[client], last)})
		}
	}
	return vs
}

func sortedClients(m map[int]int64) []int {
	out := make([]int, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// revision is what the store did at one resourceVersion to one of the test's objects.
type revision struct {
	RV      int64
	Key     string
	Deleted bool
	Value   string
	Source  string
}

func (r revision) same(o revision) bool {
	if r.Key != o.Key || r.Deleted != o.Deleted {
		return false
	}
	return r.Deleted || r.Value == o.Value
}

func (r revision) String() string {
	if r.Deleted {
		return fmt.Sprintf("delete %s@%d (%s)", r.Key, r.RV, r.Source)
	}
	return fmt.Sprintf("put %s=%s@%d (%s)", r.Key, r.Value, r.RV, r.Source)
}

// revisions is everything known of the store's history: acknowledged writes, watch events and the
// objects reads returned (an object read with value v at resourceVersion r means r put v).
type revisions struct {
	byRV  map[int64]revision
	byKey map[string][]revision
	// discarded are the revisions restores from a snapshot threw away: part of the history up to
	// the restore, not after it.
	discarded []rvSpan
}

// gone says whether the revision r is no longer in the store at rv: a restore discarded it
// before rv.
func (revs revisions) gone(r, rv int64) bool {
	for _, s := range revs.discarded {
		if s.holds(r) && rv > s.Before {
			return true
		}
	}
	return false
}

// buildRevisions gathers the known revisions and reports two sources that disagree about one.
func buildRevisions(h *History) (revisions, []Violation) {
	revs := revisions{byRV: map[int64]revision{}, byKey: map[string][]revision{}}
	var vs []Violation
	add := func(r revision) {
		if r.RV == 0 {
			return
		}
		if old, ok := revs.byRV[r.RV]; ok {
			if !old.same(r) {
				vs = append(vs, Violation{Check: CheckRevision, Key: r.Key, Detail: fmt.Sprintf("%s, but %s", old, r)})
			}
			return
		}
		revs.byRV[r.RV] = r
		revs.byKey[r.Key] = append(revs.byKey[r.Key], r)
	}
	for _, op := range h.Ops {
		switch {
		case op.Outcome != OutcomeOK:
		case op.Kind == OpDelete:
			// A delete's response is the object before; its revision comes from watches.
		case op.Kind.IsWrite():
			add(revision{RV: op.RV, Key: op.Key, Value: op.Value, Source: op.String()})
		case op.Found:
			add(revision{RV: op.RV, Key: op.Key, Value: op.ReadValue, Source: op.String()})
		}
	}
	for wi, w := range h.Watches {
		for _, e := range w.Events {
			if e.Type == EventBookmark {
				continue
			}
			add(revision{RV: e.RV, Key: e.Key, Deleted: e.Type == EventDeleted, Value: e.Value,
				Source: fmt.Sprintf("watch %d %s", wi, e.Type)})
		}
	}
	for _, l := range allLists(h) {
		for _, it := range l.Items {
			add(revision{RV: it.RV, Key: it.Key, Value: it.Value, Source: fmt.Sprintf("list at %d", l.RV)})
		}
	}
	for k := range revs.byKey {
		sort.Slice(revs.byKey[k], func(i, j int) bool { return revs.byKey[k][i].RV < revs.byKey[k][j].RV })
	}
	return revs, vs
}

func allLists(h *History) []List {
	out := h.Lists
	if h.Final != nil {
		out = append(append([]List(nil), out...), *h.Final)
	}
	for _, inf := range h.Informers {
		out = append(out, List{Items: inf.Items})
	}
	return out
}

// checkPhantoms reports observed values that no write carried, and values of writes that
// definitely failed (check 4: a failed write never appears later).
func checkPhantoms(h *History) []Violation {
	writer := map[string]Op{}
	for _, op := range h.Ops {
		if op.Kind.IsWrite() && op.Value != "" {
			writer[op.Value] = op
		}
	}
	var vs []Violation
	seen := func(key, value, where string) {
		op, ok := writer[value]
		switch {
		case !ok:
			vs = append(vs, Violation{Check: CheckPhantom, Key: key, Detail: fmt.Sprintf("%s shows value %q that no write carried", where, value)})
		case op.Outcome == OutcomeFailed:
			vs = append(vs, Violation{Check: CheckPhantom, Key: key, Detail: fmt.Sprintf("%s shows the value of a write that failed: %s", where, op)})
		case op.Key != key:
			vs = append(vs, Violation{Check: CheckPhantom, Key: key, Detail: fmt.Sprintf("%s shows value %q written to %s", where, value, op.Key)})
		}
	}
	for _, op := range h.Ops {
		if !op.Kind.IsWrite() && op.Outcome == OutcomeOK && op.Found {
			seen(op.Key, op.ReadValue, op.String())
		}
	}
	for wi, w := range h.Watches {
		for _, e := range w.Events {
			if e.Type != EventBookmark {
				seen(e.Key, e.Value, fmt.Sprintf("watch %d event %s@%d", wi, e.Type, e.RV))
			}
		}
	}
	for _, l := range allLists(h) {
		for _, it := range l.Items {
			seen(it.Key, it.Value, fmt.Sprintf("a list at %d", l.RV))
		}
	}
	return vs
}

// checkWatchOrder: events in strictly increasing resourceVersion after the start (so no
// duplicates), bookmarks never behind what the stream already delivered.
func checkWatchOrder(wi int, w Watch) []Violation {
	var vs []Violation
	last := w.StartRV
	for i, e := range w.Events {
		if e.Type == EventBookmark {
			if e.RV < last {
				vs = append(vs, Violation{Check: CheckWatchOrder, Detail: fmt.Sprintf("watch %d (client %d, from %d): bookmark %d at #%d after %d", wi, w.Client, w.StartRV, e.RV, i, last)})
			}
			last = max(last, e.RV)
			continue
		}
		if e.RV <= last {
			vs = append(vs, Violation{Check: CheckWatchOrder, Key: e.Key, Detail: fmt.Sprintf("watch %d (client %d, from %d): %s@%d at #%d after %d", wi, w.Client, w.StartRV, e.Type, e.RV, i, last)})
		}
		last = max(last, e.RV)
	}
	return vs
}

// streamEnd is the newest resourceVersion a stream vouched for: its last event or bookmark.
func streamEnd(w Watch) int64 {
	end := w.StartRV
	for _, e := range w.Events {
		end = max(end, e.RV)
	}
	return end
}

// checkWatchGaps: every known revision between the stream's start and its end must be in it.
func checkWatchGaps(wi int, w Watch, revs revisions) []Violation {
	end := streamEnd(w)
	got := map[int64]bool{}
	for _, e := range w.Events {
		got[e.RV] = true
	}
	var missing []revision
	for rv, r := range revs.byRV {
		if rv > w.StartRV && rv <= end && !got[rv] {
			missing = append(missing, r)
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].RV < missing[j].RV })
	var vs []Violation
	for _, r := range missing {
		vs = append(vs, Violation{Check: CheckWatchGap, Key: r.Key, Detail: fmt.Sprintf("watch %d (client %d, from %d to %d) lacks %s", wi, w.Client, w.StartRV, end, r)})
	}
	return vs
}

// coverage is the resourceVersions from the history's start up to which every revision is known:
// the watch streams chained without a hole from StartRV (a stream starting at or before where the
// chain reached extends it to its end).
func coverage(h *History) int64 {
	type span struct{ from, to int64 }
	var spans []span
	for _, w := range h.Watches {
		spans = append(spans, span{w.StartRV, streamEnd(w)})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	reach := h.StartRV
	for _, s := range spans {
		if s.from > reach {
			break
		}
		reach = max(reach, s.to)
	}
	return reach
}

// uncertain are the keys whose state at a LIST cannot be replayed: a write of unknown outcome
// whose value nobody saw, or a delete whose revision no watch delivered, invoked before the LIST
// returned. With the watches' coverage reaching the LIST's resourceVersion, every revision is known
// and nothing is uncertain.
func uncertain(h *History, l List, revs revisions, cov int64) map[string]bool {
	out := map[string]bool{}
	if l.RV <= cov {
		return out
	}
	valueSeen := map[string]bool{}
	for _, r := range revs.byRV {
		if !r.Deleted {
			valueSeen[r.Value] = true
		}
	}
	for _, op := range h.Ops {
		if !op.Kind.IsWrite() || op.Call > l.Return || op.Outcome == OutcomeFailed {
			continue
		}
		if op.Kind == OpDelete || (op.Outcome == OutcomeUnknown && !valueSeen[op.Value]) {
			out[op.Key] = true
		}
	}
	return out
}

// replay is the state of every key at rv from the known revisions.
func replay(revs revisions, rv int64) map[string]Item {
	out := map[string]Item{}
	for k, rs := range revs.byKey {
		var last *revision
		for i := range rs {
			if rs[i].RV <= rv && !revs.gone(rs[i].RV, rv) {
				last = &rs[i]
			}
		}
		if last != nil && !last.Deleted {
			out[k] = Item{Key: k, Value: last.Value, RV: last.RV}
		}
	}
	return out
}

// checkList: the LIST equals the history replayed to its resourceVersion; a consistent LIST is at
// least as new as every write acknowledged before it started.
func checkList(li int, l List, h *History, revs revisions, cov int64) []Violation {
	var vs []Violation
	name := fmt.Sprintf("list %d (client %d, rv=%q match=%q limit=%d) at %d", li, l.Client, l.RequestRV, l.Match, l.Limit, l.RV)
	want := replay(revs, l.RV)
	skip := uncertain(h, l, revs, cov)
	got := map[string]Item{}
	for _, it := range l.Items {
		if _, dup := got[it.Key]; dup {
			vs = append(vs, Violation{Check: CheckList, Key: it.Key, Detail: name + " has the object twice"})
		}
		got[it.Key] = it
		if it.RV > l.RV {
			vs = append(vs, Violation{Check: CheckList, Key: it.Key, Detail: fmt.Sprintf("%s has it at %d, newer than the list", name, it.RV)})
		}
	}
	for _, k := range unionKeys(want, got) {
		if skip[k] {
			continue
		}
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case inWant && !inGot:
			vs = append(vs, Violation{Check: CheckList, Key: k, Detail: fmt.Sprintf("%s lacks it; the history has %s@%d", name, w.Value, w.RV)})
		case !inWant && inGot:
			vs = append(vs, Violation{Check: CheckList, Key: k, Detail: fmt.Sprintf("%s has %s@%d; the history has no such object then", name, g.Value, g.RV)})
		case w != g:
			vs = append(vs, Violation{Check: CheckList, Key: k, Detail: fmt.Sprintf("%s has %s@%d; the history has %s@%d", name, g.Value, g.RV, w.Value, w.RV)})
		}
	}
	if !l.Consistent() {
		return vs
	}
	for _, op := range h.Ops {
		if op.Kind.IsWrite() && op.Outcome == OutcomeOK && op.Return < l.Call && op.RV > l.RV {
			vs = append(vs, Violation{Check: CheckConsistent, Key: op.Key, Detail: fmt.Sprintf("%s started after %s was acknowledged", name, op)})
		}
	}
	return vs
}

func unionKeys(a, b map[string]Item) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkFinal: every acknowledged write is at or before the final state (none lost), and every
// informer converged to the final state (check 5).
func checkFinal(h *History, ep epochs) []Violation {
	if h.Final == nil {
		return nil
	}
	var vs []Violation
	final := map[string]Item{}
	for _, it := range h.Final.Items {
		final[it.Key] = it
	}
	latest := map[string]Op{}
	for _, op := range h.Ops {
		if op.Kind.IsWrite() && op.Kind != OpDelete && op.Outcome == OutcomeOK && op.RV > latest[op.Key].RV && !ep.isDiscarded(op.RV) {
			latest[op.Key] = op
		}
	}
	for k, op := range latest {
		f, ok := final[k]
		switch {
		case ok && f.RV < op.RV:
			vs = append(vs, Violation{Check: CheckLostWrite, Key: k, Detail: fmt.Sprintf("the final state has %s@%d, older than the acknowledged %s", f.Value, f.RV, op)})
		case !ok && !deletedAfter(h.Ops, k, op.Call):
			vs = append(vs, Violation{Check: CheckLostWrite, Key: k, Detail: fmt.Sprintf("the final state lacks the object, and no delete followed the acknowledged %s", op)})
		}
	}
	for _, inf := range h.Informers {
		if !inf.Synced {
			vs = append(vs, Violation{Check: CheckInformer, Detail: fmt.Sprintf("client %d's informer never synced", inf.Client)})
			continue
		}
		got := map[string]Item{}
		for _, it := range inf.Items {
			got[it.Key] = it
		}
		for _, k := range unionKeys(final, got) {
			if final[k] != got[k] {
				vs = append(vs, Violation{Check: CheckInformer, Key: k, Detail: fmt.Sprintf("client %d's informer has %+v, the final state %+v", inf.Client, got[k], final[k])})
			}
		}
	}
	return vs
}

// deletedAfter says whether a delete of key that may have happened was invoked after t.
func deletedAfter(ops []Op, key string, t int64) bool {
	for _, op := range ops {
		if op.Kind == OpDelete && op.Key == key && op.Outcome != OutcomeFailed && op.Return >= t {
			return true
		}
	}
	return false
}
