package robustness

import (
	"fmt"
	"sort"
	"time"
)

// The kinds of control-plane objects the run records from watches (check 6).
const (
	KindPod        = "Pod"
	KindReplicaSet = "ReplicaSet"
	KindLease      = "Lease"
)

// The control-plane checks (6 in issue 24).
const (
	CheckBinding   = "binding"    // a pod's spec.nodeName changed or was cleared once set
	CheckSurge     = "surge"      // a ReplicaSet had more active pods than it may
	CheckLeaseHeld = "lease-held" // two holders of one Lease at once by its own record
)

// ObjectVersion is one version of a control-plane object as a watch event or a LIST delivered it.
// Only the fields the invariants read are kept.
type ObjectVersion struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	RV        int64  `json:"rv"`
	Deleted   bool   `json:"deleted,omitempty"`
	// Pod: the node it is bound to, whether upstream's controllers count it (not terminating,
	// not Succeeded or Failed), and the UID of its controller.
	NodeName string `json:"nodeName,omitempty"`
	Active   bool   `json:"active,omitempty"`
	Owner    string `json:"owner,omitempty"`
	// Running: the kubelet (real or simulated) reported the pod Running.
	Running bool `json:"running,omitempty"`
	// ReplicaSet: spec.replicas, metadata.generation, status.observedGeneration.
	Replicas           int32 `json:"replicas,omitempty"`
	Generation         int64 `json:"generation,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Lease: its record, times in Unix nanoseconds (every node shares this machine's clock).
	Holder       string `json:"holder,omitempty"`
	AcquireTime  int64  `json:"acquireTime,omitempty"`
	RenewTime    int64  `json:"renewTime,omitempty"`
	LeaseSeconds int32  `json:"leaseSeconds,omitempty"`
}

// RecordGap is a stretch of revisions one kind's record may lack: its watch could not resume
// (410) and a LIST at To replaced the events after From.
type RecordGap struct {
	Kind string `json:"kind"`
	From int64  `json:"from"`
	To   int64  `json:"to"`
}

func (v ObjectVersion) String() string {
	return fmt.Sprintf("%s %s/%s (uid %s) @%d", v.Kind, v.Namespace, v.Name, v.UID, v.RV)
}

// ObjectCounts says what the control-plane record holds: distinct pods, pods bound to a node,
// ReplicaSet versions and Lease versions (a run whose record has no bound pod judged nothing).
type ObjectCounts struct {
	Pods, Bound, ReplicaSetVersions, LeaseVersions int
	// RunningOn counts the pods each node reported Running.
	RunningOn map[string]int
}

// CountObjects counts a record.
func CountObjects(versions []ObjectVersion) ObjectCounts {
	c := ObjectCounts{RunningOn: map[string]int{}}
	pods, bound, running := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, v := range versions {
		switch v.Kind {
		case KindPod:
			pods[v.UID] = true
			if v.NodeName != "" {
				bound[v.UID] = true
			}
			if v.Running && v.NodeName != "" && !running[v.UID] {
				running[v.UID] = true
				c.RunningOn[v.NodeName]++
			}
		case KindReplicaSet:
			c.ReplicaSetVersions++
		case KindLease:
			c.LeaseVersions++
		}
	}
	c.Pods, c.Bound = len(pods), len(bound)
	return c
}

// CheckControlPlane runs the control-plane invariants on a history's recorded objects.
func CheckControlPlane(h *History) []Violation {
	// Versions a restore from a snapshot discarded were rewound by design: the objects went back
	// to the snapshot's state (a pod bound after it may be bound again, elsewhere).
	ep := newEpochs(h)
	var kept []ObjectVersion
	for _, v := range h.Objects {
		if !ep.isDiscarded(v.RV) {
			kept = append(kept, v)
		}
	}
	versions := sortedVersions(kept)
	var vs []Violation
	vs = append(vs, checkBindings(versions)...)
	vs = append(vs, checkReplicaSets(versions, h.ObjectGaps)...)
	vs = append(vs, checkLeases(versions)...)
	return vs
}

// sortedVersions orders versions by resourceVersion (one etcd revision writes one of these
// objects, so this is the store's order) and drops the copies several streams delivered.
func sortedVersions(in []ObjectVersion) []ObjectVersion {
	type id struct {
		uid     string
		rv      int64
		deleted bool
	}
	seen := map[id]bool{}
	var out []ObjectVersion
	for _, v := range in {
		k := id{v.UID, v.RV, v.Deleted}
		if v.RV == 0 || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].RV != out[j].RV {
			return out[i].RV < out[j].RV
		}
		// A delete event carries the revision of the deletion; a LIST's copy of the same object
		// carries the revision it was last written at, which is older.
		return !out[i].Deleted && out[j].Deleted
	})
	return out
}

// checkBindings: once a pod's spec.nodeName is set it never changes and is never cleared, for
// one UID (a pod bound twice, or to two nodes, shows as a change).
func checkBindings(versions []ObjectVersion) []Violation {
	bound := map[string]ObjectVersion{}
	var vs []Violation
	for _, v := range versions {
		if v.Kind != KindPod || v.Deleted {
			continue
		}
		first, ok := bound[v.UID]
		switch {
		case !ok && v.NodeName != "":
			bound[v.UID] = v
		case ok && v.NodeName != first.NodeName:
			vs = append(vs, Violation{Check: CheckBinding, Key: v.Namespace + "/" + v.Name,
				Detail: fmt.Sprintf("bound to %s at %d, then to %q at %d", first.NodeName, first.RV, v.NodeName, v.RV)})
		}
	}
	return vs
}

// checkReplicaSets: whenever a ReplicaSet gains an active pod (one is created, or adopted) while
// the controller has seen its current spec, it has at most spec.replicas active pods.
//
// Why this rule is sound: a ReplicaSet's active-pod count rises only when its controller creates
// (or adopts) a pod; terminating and finished pods are not counted, as upstream's controller does
// not count them. A sync reads the ReplicaSet, creates at most spec.replicas minus the active pods
// it knows (its expectations cover its own creations not yet seen) and only then writes
// status.observedGeneration; syncs of one key never overlap in one controller. So once
// observedGeneration has reached generation, every create still to land was decided on the current
// spec, and the count it raises stays within spec.replicas, unless the controller counted from a
// stale cache or a second controller acted: what this check is for. Legitimate transients are left
// out: a scale-down in progress lowers spec.replicas below the active pods, but only creations are
// judged; creates decided on an older, larger spec land while observedGeneration is behind. A
// Deployment's maxSurge bounds the sum of its ReplicaSets' spec.replicas, so each ReplicaSet's own
// spec.replicas is the tighter bound for it. Revisions a pod or ReplicaSet record may lack (a
// relist after 410) are not judged.
func checkReplicaSets(versions []ObjectVersion, gaps []RecordGap) []Violation {
	sets := map[string]ObjectVersion{}
	pods := map[string]ObjectVersion{}
	active := map[string]map[string]bool{} // ReplicaSet UID -> active pod UIDs
	var vs []Violation
	for _, v := range versions {
		switch v.Kind {
		case KindReplicaSet:
			if v.Deleted {
				delete(sets, v.UID)
			} else {
				sets[v.UID] = v
			}
			continue
		case KindPod:
		default:
			continue
		}
		old := pods[v.UID]
		if old.Owner != "" && active[old.Owner] != nil {
			delete(active[old.Owner], v.UID)
		}
		if v.Deleted {
			delete(pods, v.UID)
			continue
		}
		pods[v.UID] = v
		if !v.Active || v.Owner == "" {
			continue
		}
		if active[v.Owner] == nil {
			active[v.Owner] = map[string]bool{}
		}
		active[v.Owner][v.UID] = true
		gained := !(old.Active && old.Owner == v.Owner)
		rs, known := sets[v.Owner]
		if !gained || !known || inGap(gaps, v.RV) || rs.ObservedGeneration < rs.Generation {
			continue
		}
		if n := len(active[v.Owner]); n > int(rs.Replicas) {
			vs = append(vs, Violation{Check: CheckSurge, Key: rs.Namespace + "/" + rs.Name,
				Detail: fmt.Sprintf("%d active pods after %s/%s at %d; spec.replicas %d, observed (generation %d)", n, v.Namespace, v.Name, v.RV, rs.Replicas, rs.Generation)})
		}
	}
	return vs
}

// inGap says whether the pod or ReplicaSet record may lack revisions up to rv.
func inGap(gaps []RecordGap, rv int64) bool {
	for _, g := range gaps {
		if (g.Kind == KindPod || g.Kind == KindReplicaSet) && rv > g.From && rv <= g.To {
			return true
		}
	}
	return false
}

// leaseTerm is one holder's uninterrupted run of versions of a Lease: from its acquireTime to its
// last renewTime plus leaseDurationSeconds, or to the release its holder wrote.
type leaseTerm struct {
	holder string
	// acquired is the term's acquireTime as written (it names the term); start is when the term
	// can have begun at the earliest.
	acquired   int64
	start, end int64
	from, to   int64 // the revisions of its first and last version
}

// checkLeases: by each Lease's own record, no two different holders' terms overlap. A term
// promises [acquireTime, renewTime+leaseDuration) of its last renewal; a holder that gives the
// Lease up (client-go writes an empty holderIdentity) ends its term at that release's renewTime.
// Every node runs on this machine, so the times share one clock.
func checkLeases(versions []ObjectVersion) []Violation {
	terms := map[string][]leaseTerm{}
	// written is, per Lease, the latest renewTime of the versions so far: a version was
	// committed after every one at a lower revision, each of them no earlier than the renewTime
	// its writer stamped before sending it. A new holder's term starts no earlier than that, even
	// when its acquireTime, stamped before a read and a write slowed by an etcd restart, is older
	// (seen once in ext-kill-etcd: an acquireTime 9 s before the release it followed).
	written := map[string]int64{}
	var keys []string
	for _, v := range versions {
		if v.Kind != KindLease || v.Deleted {
			continue
		}
		key := v.Namespace + "/" + v.Name
		after := written[key]
		written[key] = max(after, v.RenewTime)
		ts := terms[key]
		if ts == nil {
			keys = append(keys, key)
		}
		if len(ts) > 0 && ts[len(ts)-1].holder != "" && v.Holder == "" {
			ts[len(ts)-1].end = min(ts[len(ts)-1].end, v.RenewTime)
		}
		end := v.RenewTime + int64(v.LeaseSeconds)*int64(time.Second)
		switch {
		case v.Holder == "":
		case len(ts) > 0 && ts[len(ts)-1].holder == v.Holder && ts[len(ts)-1].acquired == termStart(v):
			last := &ts[len(ts)-1]
			last.end, last.to = max(last.end, end), v.RV
		default:
			ts = append(ts, leaseTerm{holder: v.Holder, acquired: termStart(v), start: max(termStart(v), after), end: end, from: v.RV, to: v.RV})
		}
		terms[key] = ts
	}
	var vs []Violation
	for _, key := range keys {
		ts := terms[key]
		for i, b := range ts {
			for _, a := range ts[:i] {
				if a.holder != b.holder && b.start < a.end && a.start < b.end {
					vs = append(vs, Violation{Check: CheckLeaseHeld, Key: key, Detail: fmt.Sprintf(
						"%s held it until %s (versions %d-%d), %s from %s (versions %d-%d)", a.holder, time.Unix(0, a.end).UTC().Format(time.StampMicro),
						a.from, a.to, b.holder, time.Unix(0, b.start).UTC().Format(time.StampMicro), b.from, b.to)})
				}
			}
		}
	}
	return vs
}

// termStart is when a version's holder says it acquired the Lease (its renewTime if it did not
// record acquireTime).
func termStart(v ObjectVersion) int64 {
	if v.AcquireTime != 0 {
		return v.AcquireTime
	}
	return v.RenewTime
}
