package nodevolumelimits

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

const (
	ebs     = "ebs.csi.aws.com"
	hostpth = "hostpath.csi.k8s.io"
)

func csiNode(name string, limits map[string]int32) *storagev1.CSINode {
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for driver, count := range limits {
		d := storagev1.CSINodeDriver{Name: driver, NodeID: name}
		if count >= 0 {
			d.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(count)}
		}
		n.Spec.Drivers = append(n.Spec.Drivers, d)
	}
	return n
}

// bound is claim <name> bound to a CSI volume pv-<name> of driver.
func bound(name, driver string) []runtime.Object {
	return []runtime.Object{
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
			Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + name}},
		&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name}, Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-" + name}}}},
	}
}

func pending(name, class string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class}}
}

func pod(name, node string, claims ...string) *v1.Pod {
	p := st.MakePod().Name(name).Namespace("ns").Node(node).Obj()
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c,
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func attachment(claim, driver, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-" + claim + "-" + node},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + claim)}}}
}

func newPlugin(t *testing.T, objs []runtime.Object) *NodeVolumeLimits {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	pl := &NodeVolumeLimits{
		pvcLister: factory.Core().V1().PersistentVolumeClaims().Lister(), pvLister: factory.Core().V1().PersistentVolumes().Lister(),
		classLister: factory.Storage().V1().StorageClasses().Lister(), csiNodeLister: factory.Storage().V1().CSINodes().Lister(),
		vaLister: factory.Storage().V1().VolumeAttachments().Lister(),
	}
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *v1.PersistentVolumeClaim:
			err = factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		case *v1.PersistentVolume:
			err = factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o)
		case *storagev1.StorageClass:
			err = factory.Storage().V1().StorageClasses().Informer().GetIndexer().Add(o)
		case *storagev1.CSINode:
			err = factory.Storage().V1().CSINodes().Informer().GetIndexer().Add(o)
		case *storagev1.VolumeAttachment:
			err = factory.Storage().V1().VolumeAttachments().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return pl
}

func TestFilter(t *testing.T) {
	const exceeded = "Unschedulable: " + ErrReasonMaxVolumeCountExceeded
	var world []runtime.Object
	for _, c := range []string{"a", "b", "c", "d"} {
		world = append(world, bound(c, ebs)...)
	}
	world = append(world, bound("h", hostpth)...)
	world = append(world, pending("p1", "gp"), pending("p2", "gp"), pending("nc", "missing"),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp"}, Provisioner: ebs})
	owned := pod("eph", "")
	owned.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}
	strangerClaim := bound("eph-v", ebs)
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		extra    []runtime.Object
		want     string
	}{
		{"under the limit", pod("new", "", "c"), []*v1.Pod{pod("old", "n1", "a")}, []runtime.Object{csiNode("n1", map[string]int32{ebs: 2})}, ""},
		{"at the limit", pod("new", "", "c"), []*v1.Pod{pod("old", "n1", "a", "b")}, []runtime.Object{csiNode("n1", map[string]int32{ebs: 2})}, exceeded},
		{"a volume already on the node adds nothing", pod("new", "", "a"), []*v1.Pod{pod("old", "n1", "a", "b")},
			[]runtime.Object{csiNode("n1", map[string]int32{ebs: 2})}, ""},
		{"another driver's volumes do not count", pod("new", "", "c"), []*v1.Pod{pod("old", "n1", "a", "h")},
			[]runtime.Object{csiNode("n1", map[string]int32{ebs: 2, hostpth: 1})}, ""},
		{"a driver without a count has no limit", pod("new", "", "c"), []*v1.Pod{pod("old", "n1", "a", "b")},
			[]runtime.Object{csiNode("n1", map[string]int32{ebs: -1})}, ""},
		{"no CSINode: no limit", pod("new", "", "c"), []*v1.Pod{pod("old", "n1", "a", "b")}, nil, ""},
		{"attachments count", pod("new", "", "c"), []*v1.Pod{pod("old", "n1", "a")},
			[]runtime.Object{csiNode("n1", map[string]int32{ebs: 2}), attachment("d", ebs, "n1")}, exceeded},
		{"an attachment of a pod's volume counts once", pod("new", "", "c"), []*v1.Pod{pod("old", "n1", "a")},
			[]runtime.Object{csiNode("n1", map[string]int32{ebs: 2}), attachment("a", ebs, "n1")}, ""},
		{"another node's attachments do not count", pod("new", "", "c"), []*v1.Pod{pod("old", "n1", "a")},
			[]runtime.Object{csiNode("n1", map[string]int32{ebs: 2}), attachment("d", ebs, "n2")}, ""},
		{"pending claims count against the class's provisioner", pod("new", "", "p1", "p2"), nil,
			[]runtime.Object{csiNode("n1", map[string]int32{ebs: 1})}, exceeded},
		{"a pending claim shared with a pod on the node counts once", pod("new", "", "p1"), []*v1.Pod{pod("old", "n1", "p1")},
			[]runtime.Object{csiNode("n1", map[string]int32{ebs: 1})}, ""},
		{"a pending claim of a missing class does not count", pod("new", "", "nc"), []*v1.Pod{pod("old", "n1", "a")},
			[]runtime.Object{csiNode("n1", map[string]int32{ebs: 1})}, ""},
		{"missing claim", pod("new", "", "gone"), nil, []runtime.Object{csiNode("n1", map[string]int32{ebs: 1})},
			`UnschedulableAndUnresolvable: looking up PVC ns/gone: persistentvolumeclaim "gone" not found`},
		{"ephemeral claim the pod does not own", owned, nil, append([]runtime.Object{csiNode("n1", map[string]int32{ebs: 1})}, strangerClaim...),
			"Error: PVC ns/eph-v was not created for pod ns/eph (pod is not owner)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t, append(append([]runtime.Object{}, world...), tt.extra...))
			nodes := []*v1.Node{st.MakeNode().Name("n1").Obj()}
			got := st.Verdicts(st.RunFilter(pl, tt.pod, nodes, tt.existing))
			if got["n1"] != tt.want {
				t.Fatalf("got %q, want %q", got["n1"], tt.want)
			}
		})
	}
}

func TestPreFilterSkipsPodsWithoutClaims(t *testing.T) {
	pl := newPlugin(t, nil)
	if s := pl.PreFilter(t.Context(), nil, pod("p", ""), nil); !s.IsSkip() {
		t.Fatalf("PreFilter = %v, want Skip", s)
	}
	if s := pl.PreFilter(t.Context(), nil, pod("p", "", "a"), nil); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v, want success", s)
	}
}

func TestExceeds(t *testing.T) {
	used := map[string]string{"x/1": "x", "x/2": "x"}
	attached := map[string]string{"x/2": "x", "x/3": "x"}
	for _, tt := range []struct {
		name   string
		added  map[string]string
		limits map[string]int64
		want   bool
	}{
		{"room left", map[string]string{"x/4": "x"}, map[string]int64{"x": 4}, false},
		{"full", map[string]string{"x/4": "x"}, map[string]int64{"x": 3}, true},
		{"already used", map[string]string{"x/1": "x"}, map[string]int64{"x": 3}, false},
		{"no limit for the driver", map[string]string{"y/1": "y"}, map[string]int64{"x": 0}, false},
		{"zero limit", map[string]string{"y/1": "y"}, map[string]int64{"y": 0}, true},
	} {
		if got := Exceeds(tt.added, used, attached, tt.limits); got != tt.want {
			t.Errorf("%s: Exceeds = %v, want %v", tt.name, got, tt.want)
		}
	}
	if len(attached) != 2 || len(used) != 2 {
		t.Error("Exceeds changed its inputs")
	}
}
