package robustness

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// cleanHistory is a small run without a violation: two objects, a CAS that won and one that lost,
// a delete by precondition, a write of unknown outcome that did happen (seen by the watch and the
// final LIST) and one that did not, a watch with a bookmark, LISTs consistent and exact.
func cleanHistory() *History {
	return &History{
		StartRV: 9,
		Ops: []Op{
			{Client: 0, Kind: OpCreate, Key: "k0", Value: "a", Call: 0, Return: 5, Outcome: OutcomeOK, RV: 10},
			{Client: 1, Kind: OpGet, Key: "k0", Call: 6, Return: 8, Outcome: OutcomeOK, Found: true, ReadValue: "a", RV: 10},
			{Client: 2, Kind: OpApply, Key: "k1", Value: "x", Call: 7, Return: 11, Outcome: OutcomeOK, RV: 11},
			{Client: 0, Kind: OpUpdate, Key: "k0", Value: "b", Precondition: 10, Call: 9, Return: 12, Outcome: OutcomeOK, RV: 12},
			{Client: 1, Kind: OpUpdate, Key: "k0", Value: "c", Precondition: 10, Call: 10, Return: 13, Outcome: OutcomeFailed, Reason: "Conflict"},
			{Client: 1, Kind: OpGetCached, Key: "k0", Call: 13, Return: 14, Outcome: OutcomeOK, Found: true, ReadValue: "a", RV: 10},
			{Client: 0, Kind: OpDelete, Key: "k0", Precondition: 12, Call: 14, Return: 16, Outcome: OutcomeOK},
			{Client: 2, Kind: OpUpdate, Key: "k1", Value: "y", Precondition: 11, Call: 15, Return: 20, Outcome: OutcomeUnknown, Reason: "timeout"},
			{Client: 1, Kind: OpCreate, Key: "k2", Value: "z", Call: 15, Return: 21, Outcome: OutcomeUnknown, Reason: "timeout"},
			{Client: 1, Kind: OpGet, Key: "k0", Call: 17, Return: 18, Outcome: OutcomeOK},
		},
		Watches: []Watch{{Client: 3, StartRV: 9, Events: []Event{
			{Type: EventAdded, Key: "k0", Value: "a", RV: 10},
			{Type: EventAdded, Key: "k1", Value: "x", RV: 11},
			{Type: EventModified, Key: "k0", Value: "b", RV: 12},
			{Type: EventBookmark, RV: 12},
			{Type: EventDeleted, Key: "k0", Value: "b", RV: 13},
			{Type: EventModified, Key: "k1", Value: "y", RV: 14},
		}}},
		Lists: []List{
			{Client: 1, Call: 17, Return: 18, Outcome: OutcomeOK, RV: 13, Items: []Item{{Key: "k1", Value: "x", RV: 11}}},
			{Client: 2, RequestRV: "12", Match: "Exact", Call: 17, Return: 19, Outcome: OutcomeOK, RV: 12,
				Items: []Item{{Key: "k0", Value: "b", RV: 12}, {Key: "k1", Value: "x", RV: 11}}},
		},
		Informers: []InformerState{{Client: 0, Synced: true, Items: []Item{{Key: "k1", Value: "y", RV: 14}}}},
		Final:     &List{Call: 30, Return: 31, Outcome: OutcomeOK, RV: 14, Items: []Item{{Key: "k1", Value: "y", RV: 14}}},
	}
}

func checks(r Report) []string {
	var out []string
	for _, v := range r.Violations {
		if !slices.Contains(out, v.Check) {
			out = append(out, v.Check)
		}
	}
	return out
}

func TestCheckCleanHistoryPasses(t *testing.T) {
	r := Check(cleanHistory(), CheckOptions{LinearizabilityTimeout: 10 * time.Second})
	if len(r.Violations) != 0 {
		t.Fatalf("violations in a clean history: %v", r.Violations)
	}
	if r.Ops != 10 || r.Writes != 7 || r.Events != 6 || r.Watches != 1 || r.Lists != 2 {
		t.Errorf("counts: %+v", r)
	}
}

// TestCheckCatchesPlantedViolations plants one broken promise of each kind in the clean history.
func TestCheckCatchesPlantedViolations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(h *History)
		want  string
	}{
		{"lost write: the final state lacks an acknowledged object", func(h *History) {
			h.Final.Items = nil
			h.Informers[0].Items = nil
		}, CheckLostWrite},
		{"lost write: the final state older than an acknowledged update", func(h *History) {
			h.Ops = append(h.Ops, Op{Client: 2, Kind: OpApply, Key: "k1", Value: "w", Call: 22, Return: 23, Outcome: OutcomeOK, RV: 15})
		}, CheckLostWrite},
		{"reordered watch event", func(h *History) {
			ev := h.Watches[0].Events
			ev[1], ev[2] = ev[2], ev[1]
		}, CheckWatchOrder},
		{"duplicate watch event", func(h *History) {
			ev := h.Watches[0].Events
			h.Watches[0].Events = append(ev[:3:3], append([]Event{ev[2]}, ev[3:]...)...)
		}, CheckWatchOrder},
		{"bookmark going backwards", func(h *History) {
			h.Watches[0].Events[3].RV = 11
		}, CheckWatchOrder},
		{"stale read after a newer acknowledged write", func(h *History) {
			h.Ops = append(h.Ops, Op{Client: 1, Kind: OpGet, Key: "k0", Call: 13, Return: 13, Outcome: OutcomeOK, Found: true, ReadValue: "a", RV: 10})
		}, CheckLinearizable},
		{"a CAS that succeeded on a stale precondition", func(h *History) {
			h.Ops[4] = Op{Client: 1, Kind: OpUpdate, Key: "k0", Value: "c", Precondition: 10, Call: 12, Return: 13, Outcome: OutcomeOK, RV: 13}
		}, CheckLinearizable},
		{"gap after resume", func(h *History) {
			h.Watches = append(h.Watches, Watch{Client: 3, StartRV: 10, Events: []Event{
				{Type: EventModified, Key: "k0", Value: "b", RV: 12},
				{Type: EventDeleted, Key: "k0", Value: "b", RV: 13},
			}})
		}, CheckWatchGap},
		{"LIST not matching the history at its resourceVersion", func(h *History) {
			h.Lists[1].Items = h.Lists[1].Items[:1]
		}, CheckList},
		{"LIST showing a deleted object", func(h *History) {
			h.Lists[0].Items = append(h.Lists[0].Items, Item{Key: "k0", Value: "b", RV: 12})
		}, CheckList},
		{"consistent LIST older than an acknowledged write", func(h *History) {
			h.Lists[0] = List{Client: 1, Call: 17, Return: 18, Outcome: OutcomeOK, RV: 12,
				Items: []Item{{Key: "k0", Value: "b", RV: 12}, {Key: "k1", Value: "x", RV: 11}}}
			h.Ops = append(h.Ops, Op{Client: 2, Kind: OpApply, Key: "k3", Value: "q", Call: 14, Return: 16, Outcome: OutcomeOK, RV: 15})
		}, CheckConsistent},
		{"a write that failed appears later", func(h *History) {
			h.Watches[0].Events[2].Value = "c"
		}, CheckPhantom},
		{"two values at one revision", func(h *History) {
			h.Lists[1].Items[1].RV = 12
		}, CheckRevision},
		{"a watcher that stopped delivering", func(h *History) {
			h.Watches = append(h.Watches, Watch{Client: 4, StartRV: 9, Events: []Event{{Type: EventAdded, Key: "k0", Value: "a", RV: 10}}})
		}, CheckWatchGap},
		{"informer not converged", func(h *History) {
			h.Informers[0].Items[0] = Item{Key: "k1", Value: "x", RV: 11}
		}, CheckInformer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanHistory()
			tc.plant(h)
			r := Check(h, CheckOptions{LinearizabilityTimeout: 10 * time.Second})
			t.Logf("caught: %v", r.Violations)
			got := checks(r)
			if !slices.Contains(got, tc.want) {
				t.Fatalf("want a %s violation, got %v", tc.want, got)
			}
		})
	}
}

// TestUnknownOutcomeMayOrMayNotHappen: a create of unknown outcome later read back is fine, and so
// is one never seen; a read of its value before its invocation is not.
func TestUnknownOutcomeMayOrMayNotHappen(t *testing.T) {
	base := []Op{
		{Client: 0, Kind: OpCreate, Key: "k", Value: "a", Call: 10, Return: 20, Outcome: OutcomeUnknown, Reason: "timeout"},
	}
	for _, tc := range []struct {
		name string
		read Op
		ok   bool
	}{
		{"read back after", Op{Client: 1, Kind: OpGet, Key: "k", Call: 30, Return: 31, Outcome: OutcomeOK, Found: true, ReadValue: "a", RV: 7}, true},
		{"never happened", Op{Client: 1, Kind: OpGet, Key: "k", Call: 30, Return: 31, Outcome: OutcomeOK}, true},
		{"seen before its call", Op{Client: 1, Kind: OpGet, Key: "k", Call: 1, Return: 2, Outcome: OutcomeOK, Found: true, ReadValue: "a", RV: 7}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &History{Ops: append(slices.Clone(base), tc.read)}
			r := Check(h, CheckOptions{LinearizabilityTimeout: 10 * time.Second})
			if got := !slices.Contains(checks(r), CheckLinearizable); got != tc.ok {
				t.Fatalf("linearizable = %v, want %v (%v)", got, tc.ok, r.Violations)
			}
		})
	}
}

func TestHistoryRoundTripAndReport(t *testing.T) {
	dir := t.TempDir()
	h := cleanHistory()
	h.Ops = append(h.Ops, Op{Client: 1, Kind: OpGet, Key: "k0", Call: 13, Return: 13, Outcome: OutcomeOK, Found: true, ReadValue: "a", RV: 10})
	path := filepath.Join(dir, "history.json")
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	r := Check(back, CheckOptions{LinearizabilityTimeout: 10 * time.Second})
	files, err := WriteReport(dir, back, r)
	if err != nil {
		t.Fatal(err)
	}
	var html string
	for _, f := range files {
		if strings.HasSuffix(f, ".html") {
			html = f
		}
	}
	if html == "" || !strings.Contains(html, "k0") {
		t.Fatalf("no visualization of k0 among %v", files)
	}
}

// controlPlaneHistory is a clean record of control-plane objects: a ReplicaSet scaled 2 -> 1 -> 4
// -> 2 whose pods are bound once each (a scale-down in progress, and a create decided before a
// scale-down that lands after it, are legitimate), a LIST's copy of a version a watch delivered
// too, and the controller-manager Lease released by one holder, taken by another, left to expire
// and taken by a third.
func controlPlaneHistory() *History {
	const rs = "rs-uid"
	pod := func(name string, rv int64, node string, active bool) ObjectVersion {
		return ObjectVersion{Kind: KindPod, Namespace: "ns", Name: name, UID: name + "-uid", RV: rv, NodeName: node, Active: active, Owner: rs}
	}
	set := func(rv int64, replicas int32, gen, observed int64) ObjectVersion {
		return ObjectVersion{Kind: KindReplicaSet, Namespace: "ns", Name: "web", UID: rs, RV: rv, Replicas: replicas, Generation: gen, ObservedGeneration: observed}
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	lease := func(rv int64, holder string, acquire, renew time.Duration, seconds int32) ObjectVersion {
		return ObjectVersion{Kind: KindLease, Namespace: "kube-system", Name: "kube-controller-manager", UID: "lease-uid", RV: rv,
			Holder: holder, AcquireTime: t0 + int64(acquire), RenewTime: t0 + int64(renew), LeaseSeconds: seconds}
	}
	p1 := pod("p1", 13, "n1", true)
	return &History{Objects: []ObjectVersion{
		set(10, 2, 1, 0), pod("p1", 11, "", true), pod("p2", 12, "", true), p1, pod("p2", 14, "n2", true), set(15, 2, 1, 1),
		set(16, 1, 2, 1), pod("p2", 17, "n2", false), set(18, 1, 2, 2), {Kind: KindPod, Namespace: "ns", Name: "p2", UID: "p2-uid", RV: 19, Deleted: true, Owner: rs},
		set(20, 4, 3, 2), pod("p3", 21, "", true), pod("p4", 22, "", true), set(23, 2, 4, 3), pod("p5", 24, "", true),
		pod("p4", 25, "", false), pod("p5", 26, "n1", false), set(27, 2, 4, 4), p1,
		lease(30, "a", 0, 0, 15), lease(31, "a", 0, 2*time.Second, 15), lease(32, "", 3*time.Second, 3*time.Second, 1),
		lease(33, "b", 3500*time.Millisecond, 3500*time.Millisecond, 15), lease(34, "c", 19*time.Second, 19*time.Second, 15),
	}}
}

func TestControlPlaneCleanHistoryPasses(t *testing.T) {
	h := controlPlaneHistory()
	if vs := CheckControlPlane(h); len(vs) != 0 {
		t.Fatalf("violations in a clean history: %v", vs)
	}
	if r := Check(h, CheckOptions{}); len(r.Violations) != 0 || r.Objects != len(h.Objects) {
		t.Fatalf("Check: %d objects, %v", r.Objects, r.Violations)
	}
}

// TestControlPlaneCatchesPlantedViolations plants each broken control-plane promise in the clean
// record.
func TestControlPlaneCatchesPlantedViolations(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	for _, tc := range []struct {
		name  string
		plant func(h *History)
		want  string
	}{
		{"a pod bound to a second node", func(h *History) {
			h.Objects = append(h.Objects, ObjectVersion{Kind: KindPod, Namespace: "ns", Name: "p1", UID: "p1-uid", RV: 40, NodeName: "n2", Active: true, Owner: "rs-uid"})
		}, CheckBinding},
		{"a bound pod's nodeName cleared", func(h *History) {
			h.Objects = append(h.Objects, ObjectVersion{Kind: KindPod, Namespace: "ns", Name: "p3", UID: "p3-uid", RV: 40, NodeName: "n1", Active: true, Owner: "rs-uid"},
				ObjectVersion{Kind: KindPod, Namespace: "ns", Name: "p3", UID: "p3-uid", RV: 41, Active: true, Owner: "rs-uid"})
		}, CheckBinding},
		{"a pod created beyond spec.replicas once the controller saw the spec", func(h *History) {
			h.Objects = append(h.Objects, ObjectVersion{Kind: KindPod, Namespace: "ns", Name: "p6", UID: "p6-uid", RV: 40, Active: true, Owner: "rs-uid"})
		}, CheckSurge},
		{"a pod adopted beyond spec.replicas", func(h *History) {
			h.Objects = append(h.Objects, ObjectVersion{Kind: KindPod, Namespace: "ns", Name: "o", UID: "o-uid", RV: 40, Active: true},
				ObjectVersion{Kind: KindPod, Namespace: "ns", Name: "o", UID: "o-uid", RV: 41, Active: true, Owner: "rs-uid"})
		}, CheckSurge},
		{"a second holder while the first's renewal still held", func(h *History) {
			h.Objects = append(h.Objects[:len(h.Objects)-3], ObjectVersion{Kind: KindLease, Namespace: "kube-system", Name: "kube-controller-manager", UID: "lease-uid", RV: 33,
				Holder: "b", AcquireTime: t0 + int64(10*time.Second), RenewTime: t0 + int64(10*time.Second), LeaseSeconds: 15})
		}, CheckLeaseHeld},
		{"a holder taking over before the last renewal's term ran out", func(h *History) {
			h.Objects = append(h.Objects[:len(h.Objects)-3], ObjectVersion{Kind: KindLease, Namespace: "kube-system", Name: "kube-controller-manager", UID: "lease-uid", RV: 33,
				Holder: "b", AcquireTime: t0 + int64(16900*time.Millisecond), RenewTime: t0 + int64(16900*time.Millisecond), LeaseSeconds: 15})
		}, CheckLeaseHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := controlPlaneHistory()
			tc.plant(h)
			vs := CheckControlPlane(h)
			t.Logf("caught: %v", vs)
			if got := checks(Report{Violations: vs}); !slices.Contains(got, tc.want) {
				t.Fatalf("want a %s violation, got %v", tc.want, got)
			}
		})
	}
}

// TestSurgeNotJudgedInARecordGap: a create the record may have lacked the context of (its pods'
// watch relisted across it) is not judged.
func TestSurgeNotJudgedInARecordGap(t *testing.T) {
	h := controlPlaneHistory()
	h.Objects = append(h.Objects, ObjectVersion{Kind: KindPod, Namespace: "ns", Name: "p6", UID: "p6-uid", RV: 40, Active: true, Owner: "rs-uid"})
	h.ObjectGaps = []RecordGap{{Kind: KindPod, From: 35, To: 45}}
	if vs := CheckControlPlane(h); len(vs) != 0 {
		t.Fatalf("a create inside a gap of the record judged: %v", vs)
	}
}

// A new holder stamps acquireTime before it reads the Lease and writes its claim; when an etcd
// restart slows both, the claim lands after the old holder's release (at a higher revision) with
// an acquireTime before it. It could only have decided after reading the release: no overlap
// (a false alarm of a 30-minute ext-kill-etcd run, an acquireTime 9 s before the release).
func TestLeaseClaimStampedBeforeTheReleaseIsNotJudged(t *testing.T) {
	h := controlPlaneHistory()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	h.Objects[len(h.Objects)-2].AcquireTime = t0 + int64(2500*time.Millisecond)
	if vs := CheckControlPlane(h); len(vs) != 0 {
		t.Fatalf("a claim written after the release judged by its stamp: %v", vs)
	}
}
