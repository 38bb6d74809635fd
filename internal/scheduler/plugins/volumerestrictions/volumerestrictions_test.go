package volumerestrictions

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/scheduler/cache"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func claim(name string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.PersistentVolumeClaimSpec{AccessModes: modes}}
}

func pod(name, ns, node string, claims ...string) *v1.Pod {
	p := st.MakePod().Name(name).Namespace(ns).UID("uid-" + name).Node(node).Obj()
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c,
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func newPlugin(t *testing.T, claims ...*v1.PersistentVolumeClaim) *VolumeRestrictions {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	for _, c := range claims {
		if err := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return &VolumeRestrictions{pvcLister: factory.Core().V1().PersistentVolumeClaims().Lister()}
}

func TestFilter(t *testing.T) {
	const conflict = "Unschedulable: " + ErrReasonReadWriteOncePodConflict
	claims := []*v1.PersistentVolumeClaim{claim("once", v1.ReadWriteOncePod), claim("shared", v1.ReadWriteOnce, v1.ReadOnlyMany)}
	nodes := []*v1.Node{st.MakeNode().Name("n1").Obj(), st.MakeNode().Name("n2").Obj()}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]string
	}{
		{"unused ReadWriteOncePod claim: anywhere", pod("p", "ns", "", "once"), nil, map[string]string{"n1": "", "n2": ""}},
		{"used on one node: nowhere", pod("p", "ns", "", "once"), []*v1.Pod{pod("user", "ns", "n1", "once")},
			map[string]string{"n1": conflict, "n2": conflict}},
		{"other access modes: no rule", pod("p", "ns", "", "shared"), []*v1.Pod{pod("user", "ns", "n1", "shared")},
			map[string]string{"n1": "", "n2": ""}},
		{"a claim of that name in another namespace is another claim", pod("p", "ns", "", "once"), []*v1.Pod{pod("user", "other", "n1", "once")},
			map[string]string{"n1": "", "n2": ""}},
		{"missing claim", pod("p", "ns", "", "gone"), nil, map[string]string{
			"n1": `UnschedulableAndUnresolvable: persistentvolumeclaim "gone" not found`, "n2": `UnschedulableAndUnresolvable: persistentvolumeclaim "gone" not found`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := st.Verdicts(st.RunFilter(newPlugin(t, claims...), tt.pod, nodes, tt.existing))
			for n, want := range tt.want {
				if got[n] != want {
					t.Errorf("%s: got %q, want %q", n, got[n], want)
				}
			}
		})
	}
}

// TestPreemptionSimulation: removing the claim's user (as preemption's victim search does) frees
// the node; adding it back takes it again.
func TestPreemptionSimulation(t *testing.T) {
	pl := newPlugin(t, claim("once", v1.ReadWriteOncePod))
	user := pod("user", "ns", "n1", "once")
	incoming := pod("p", "ns", "", "once")
	snap := cache.NewSnapshot([]*v1.Pod{user}, []*v1.Node{st.MakeNode().Name("n1").Obj()})
	ctx := context.Background()
	state := framework.NewCycleState()
	if s := pl.PreFilter(ctx, state, incoming, snap); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	ni, _ := snap.Get("n1")
	if s := pl.Filter(ctx, state, incoming, ni); s.IsSuccess() {
		t.Fatal("claim in use, yet the node fits")
	}
	sim := state.Clone()
	if s := pl.RemovePod(ctx, sim, incoming, &framework.PodInfo{Pod: user}, ni); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := pl.Filter(ctx, sim, incoming, ni); !s.IsSuccess() {
		t.Fatalf("after evicting the user: %v", s)
	}
	if s := pl.Filter(ctx, state, incoming, ni); s.IsSuccess() {
		t.Fatal("the simulation changed the cycle's own state")
	}
	if s := pl.AddPod(ctx, sim, incoming, &framework.PodInfo{Pod: user}, ni); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := pl.Filter(ctx, sim, incoming, ni); s.IsSuccess() {
		t.Fatal("user added back, yet the node fits")
	}
}

func TestPreFilterSkips(t *testing.T) {
	pl := newPlugin(t, claim("rwo", v1.ReadWriteOnce))
	for _, p := range []*v1.Pod{pod("none", "ns", ""), pod("rwo", "ns", "", "rwo")} {
		if s := pl.PreFilter(context.Background(), framework.NewCycleState(), p, nil); !s.IsSkip() {
			t.Errorf("%s: PreFilter = %v, want Skip", p.Name, s)
		}
	}
}
