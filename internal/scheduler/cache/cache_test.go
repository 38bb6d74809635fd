package cache_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"

	. "github.com/skiff-sh/skiff/internal/scheduler/cache"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func TestAssumeConfirmForget(t *testing.T) {
	c := New()
	c.AddNode(st.MakeNode().Name("n1").Capacity(st.Res{"cpu": "4"}).Obj())
	pod := st.MakePod().Name("p").Req(st.Res{"cpu": "1"}).Node("n1").Obj()
	if err := c.AssumePod(pod); err != nil {
		t.Fatal(err)
	}
	if err := c.AssumePod(pod); err == nil {
		t.Fatal("assuming twice must fail")
	}
	snap := NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	ni, _ := snap.Get("n1")
	if ni.Requested.MilliCPU != 1000 || !c.IsAssumedPod(pod) {
		t.Fatalf("assumed pod not counted: %d", ni.Requested.MilliCPU)
	}
	// The informer confirms: still counted once.
	c.AddPod(pod.DeepCopy())
	c.UpdateSnapshot(snap)
	ni, _ = snap.Get("n1")
	if ni.Requested.MilliCPU != 1000 || c.IsAssumedPod(pod) || len(ni.Pods) != 1 {
		t.Fatalf("confirmed pod counted %dm, %d pods", ni.Requested.MilliCPU, len(ni.Pods))
	}
	if err := c.ForgetPod(pod); err == nil {
		t.Fatal("forgetting a confirmed pod must fail")
	}
	c.RemovePod(pod)
	c.UpdateSnapshot(snap)
	ni, _ = snap.Get("n1")
	if ni.Requested.MilliCPU != 0 || len(ni.Pods) != 0 {
		t.Fatal("removed pod still counted")
	}
	other := st.MakePod().Name("q").Req(st.Res{"cpu": "2"}).Node("n1").Obj()
	_ = c.AssumePod(other)
	if err := c.ForgetPod(other); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(snap)
	ni, _ = snap.Get("n1")
	if ni.Requested.MilliCPU != 0 {
		t.Fatal("forgotten pod still counted")
	}
}

// TestIncrementalSnapshotMatchesFresh applies random changes and checks the
// incrementally updated snapshot against one built from scratch.
func TestIncrementalSnapshotMatchesFresh(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	c := New()
	snap := NewEmptySnapshot()
	nodes := map[string]*v1.Node{}
	pods := map[string]*v1.Pod{}
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 2 || len(nodes) == 0:
			name := fmt.Sprintf("n%d", rng.IntN(30))
			n := st.MakeNode().Name(name).Capacity(st.Res{"cpu": fmt.Sprintf("%d", 1+rng.IntN(8))}).Image(int64(rng.IntN(100)), fmt.Sprintf("img%d", rng.IntN(3))).Obj()
			nodes[name] = n
			c.AddNode(n)
		case op == 2:
			for name, n := range nodes {
				c.RemoveNode(n)
				delete(nodes, name)
				break
			}
		case op < 6:
			var nodeName string
			for name := range nodes {
				nodeName = name
				break
			}
			w := st.MakePod().Name(fmt.Sprintf("p%d", step)).Req(st.Res{"cpu": "100m"}).Node(nodeName)
			if rng.IntN(4) == 0 {
				w = w.Label("app", "x").PodAntiAffinity(st.PodAffinityTerm("zone", "app", "x"))
			}
			p := w.Obj()
			pods[p.Name] = p
			if rng.IntN(2) == 0 {
				_ = c.AssumePod(p)
			} else {
				c.AddPod(p)
			}
		default:
			for name, p := range pods {
				c.RemovePod(p)
				delete(pods, name)
				break
			}
		}
		if rng.IntN(3) == 0 {
			c.UpdateSnapshot(snap)
			assertSnapshotEqual(t, step, snap, freshSnapshot(nodes, pods))
		}
	}
}

func freshSnapshot(nodes map[string]*v1.Node, pods map[string]*v1.Pod) *Snapshot {
	var ns []*v1.Node
	for _, n := range nodes {
		ns = append(ns, n)
	}
	var ps []*v1.Pod
	for _, p := range pods {
		ps = append(ps, p)
	}
	return NewSnapshot(ps, ns)
}

func assertSnapshotEqual(t *testing.T, step int, got, want *Snapshot) {
	t.Helper()
	if len(got.List()) != len(want.List()) {
		t.Fatalf("step %d: %d nodes, want %d", step, len(got.List()), len(want.List()))
	}
	for i, ni := range got.List() {
		w := want.List()[i]
		if ni.Node().Name != w.Node().Name || ni.Requested.MilliCPU != w.Requested.MilliCPU || len(ni.Pods) != len(w.Pods) ||
			ni.Allocatable.MilliCPU != w.Allocatable.MilliCPU {
			t.Fatalf("step %d: node %s differs: cpu %d/%d pods %d/%d alloc %d/%d", step, ni.Node().Name,
				ni.Requested.MilliCPU, w.Requested.MilliCPU, len(ni.Pods), len(w.Pods), ni.Allocatable.MilliCPU, w.Allocatable.MilliCPU)
		}
		for name, img := range ni.ImageStates {
			if w.ImageStates[name] == nil || img.NumNodes != w.ImageStates[name].NumNodes {
				t.Fatalf("step %d: image %s on %s counted on %d nodes, want %v", step, name, ni.Node().Name, img.NumNodes, w.ImageStates[name])
			}
		}
	}
	if len(got.HavePodsWithRequiredAntiAffinityList()) != len(want.HavePodsWithRequiredAntiAffinityList()) ||
		len(got.HavePodsWithAffinityList()) != len(want.HavePodsWithAffinityList()) {
		t.Fatalf("step %d: affinity lists differ", step)
	}
	if _, err := got.Get("nope"); err == nil {
		t.Fatal("missing node must fail")
	}
}

// The affinity lists follow incremental snapshot updates (they are rebuilt when asked for), and
// the cache's set of changed nodes works the same after a burst that grew it.
func TestAffinityListsFollowUpdates(t *testing.T) {
	c := New()
	for i := range 200 { // more than the changed-node set is kept for
		c.AddNode(st.MakeNode().Name(fmt.Sprintf("n%03d", i)).Capacity(st.Res{"cpu": "4"}).Obj())
	}
	snap := NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	names := func(list []*framework.NodeInfo) []string {
		var out []string
		for _, ni := range list {
			out = append(out, ni.Node().Name)
		}
		return out
	}
	check := func(step string, withAffinity, withAnti []string) {
		t.Helper()
		if got := names(snap.HavePodsWithAffinityList()); fmt.Sprint(got) != fmt.Sprint(withAffinity) {
			t.Fatalf("%s: nodes with affinity pods %v, want %v", step, got, withAffinity)
		}
		if got := names(snap.HavePodsWithRequiredAntiAffinityList()); fmt.Sprint(got) != fmt.Sprint(withAnti) {
			t.Fatalf("%s: nodes with anti-affinity pods %v, want %v", step, got, withAnti)
		}
	}
	check("empty", nil, nil)
	anti := st.MakePod().Name("anti").UID("anti").Node("n007").PodAntiAffinity(st.PodAffinityTerm("zone", "app", "x")).Obj()
	aff := st.MakePod().Name("aff").UID("aff").Node("n150").PodAffinity(st.PodAffinityTerm("zone", "app", "y")).Obj()
	plain := st.MakePod().Name("plain").UID("plain").Node("n003").Obj()
	for _, p := range []*v1.Pod{anti, aff, plain} {
		c.AddPod(p)
	}
	c.UpdateSnapshot(snap)
	check("after adds", []string{"n007", "n150"}, []string{"n007"})
	c.RemovePod(anti)
	moved := anti.DeepCopy()
	moved.Spec.NodeName = "n199"
	c.AddPod(moved)
	c.UpdateSnapshot(snap)
	check("after a move", []string{"n150", "n199"}, []string{"n199"})
	ni, err := snap.Get("n199")
	if err != nil || len(ni.Pods) != 1 {
		t.Fatalf("n199 in the snapshot: %v, %v", ni, err)
	}
}
