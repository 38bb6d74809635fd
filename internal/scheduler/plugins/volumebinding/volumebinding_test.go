package volumebinding

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func class(name, provisioner string, mode storagev1.VolumeBindingMode, zones ...string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
	if len(zones) > 0 {
		sc.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: v1.LabelTopologyZone, Values: zones}}}}
	}
	return sc
}

func claim(name, className, volume string) *v1.PersistentVolumeClaim {
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &className, VolumeName: volume, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	if volume != "" {
		pvc.Status.Phase = v1.ClaimBound
	}
	return pvc
}

func volume(name, className, size, onNode string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			StorageClassName: className, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/d/" + name}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	if onNode != "" {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{onNode}}},
		}}}}
	}
	return pv
}

// capacityDriver is the CSIDriver of the "csi" class's provisioner, publishing capacity or not.
func capacityDriver(publishes bool) *storagev1.CSIDriver {
	return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io"},
		Spec: storagev1.CSIDriverSpec{StorageCapacity: &publishes}}
}

// capacity is a CSIStorageCapacity of className for the nodes of zone (maxSize optional).
func capacity(className, zone, size, maxSize string) *storagev1.CSIStorageCapacity {
	q := resource.MustParse(size)
	c := &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Name: className + "-" + zone, Namespace: "kube-system"},
		StorageClassName: className, Capacity: &q,
		NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelTopologyZone: zone}},
	}
	if maxSize != "" {
		m := resource.MustParse(maxSize)
		c.MaximumVolumeSize = &m
	}
	return c
}

func podWith(claims ...string) *v1.Pod {
	pod := st.MakePod().Name("p").Namespace("ns").Obj()
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c},
		}})
	}
	return pod
}

// newPlugin builds the plugin on a fake clientset holding objs, with its informer caches seeded.
func newPlugin(t *testing.T, objs ...runtime.Object) (*VolumeBinding, *fake.Clientset, informers.SharedInformerFactory) {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	b := &VolumeBinding{
		client:         client,
		pvcLister:      factory.Core().V1().PersistentVolumeClaims().Lister(),
		pvLister:       factory.Core().V1().PersistentVolumes().Lister(),
		classLister:    factory.Storage().V1().StorageClasses().Lister(),
		driverLister:   factory.Storage().V1().CSIDrivers().Lister(),
		capacityLister: factory.Storage().V1().CSIStorageCapacities().Lister(),
		bindTimeout:    time.Minute,
		pollInterval:   time.Millisecond,
	}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *v1.PersistentVolumeClaim:
			err = factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		case *v1.PersistentVolume:
			err = factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o)
		case *storagev1.StorageClass:
			err = factory.Storage().V1().StorageClasses().Informer().GetIndexer().Add(o)
		case *storagev1.CSIDriver:
			err = factory.Storage().V1().CSIDrivers().Informer().GetIndexer().Add(o)
		case *storagev1.CSIStorageCapacity:
			err = factory.Storage().V1().CSIStorageCapacities().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return b, client, factory
}

func TestFilter(t *testing.T) {
	const (
		unresolvable = "UnschedulableAndUnresolvable: "
		bindConflict = unresolvable + ErrReasonBindConflict
		nodeConflict = unresolvable + ErrReasonNodeConflict
	)
	nodes := []*v1.Node{
		st.MakeNode().Name("n1").Label(v1.LabelHostname, "n1").Label(v1.LabelTopologyZone, "a").Obj(),
		st.MakeNode().Name("n2").Label(v1.LabelHostname, "n2").Label(v1.LabelTopologyZone, "b").Obj(),
	}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	classes := []runtime.Object{
		class("local-path", "skiff.dev/local-path", wffc),
		class("zoned", "skiff.dev/local-path", wffc, "b"),
		class("static", noProvisioner, wffc),
		class("now", "skiff.dev/local-path", storagev1.VolumeBindingImmediate),
		class("csi", "hostpath.csi.k8s.io", wffc),
	}
	boundOnN2 := volume("pv-n2", "local-path", "1Gi", "n2")
	boundOnN2.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "bound", UID: "uid-bound"}
	selected := claim("selected", "local-path", "")
	selected.Annotations = map[string]string{AnnSelectedNode: "n1"}
	ephemeral := podWith()
	ephemeral.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}
	tests := []struct {
		name  string
		pod   *v1.Pod
		extra []runtime.Object
		want  map[string]string
	}{
		{"no claims", podWith(), nil, map[string]string{"n1": "", "n2": ""}},
		{"provisionable anywhere", podWith("data"), []runtime.Object{claim("data", "local-path", "")}, map[string]string{"n1": "", "n2": ""}},
		{"allowedTopologies", podWith("data"), []runtime.Object{claim("data", "zoned", "")}, map[string]string{"n1": bindConflict, "n2": ""}},
		{"bound volume's node affinity", podWith("bound"), []runtime.Object{claim("bound", "local-path", "pv-n2"), boundOnN2},
			map[string]string{"n1": nodeConflict, "n2": ""}},
		{"static only: where an available volume is", podWith("data"), []runtime.Object{claim("data", "static", ""), volume("pv-s", "static", "5Gi", "n1")},
			map[string]string{"n1": "", "n2": bindConflict}},
		{"static only: too small", podWith("data"), []runtime.Object{claim("data", "static", ""), volume("pv-s", "static", "500Mi", "n1")},
			map[string]string{"n1": bindConflict, "n2": bindConflict}},
		{"one volume for two claims", podWith("a", "b"), []runtime.Object{claim("a", "static", ""), claim("b", "static", ""), volume("pv-s", "static", "5Gi", "")},
			map[string]string{"n1": bindConflict, "n2": bindConflict}},
		{"selected node holds the pod", podWith("selected"), []runtime.Object{selected}, map[string]string{"n1": "", "n2": bindConflict}},
		{"unbound immediate claim", podWith("data"), []runtime.Object{claim("data", "now", "")},
			map[string]string{"n1": unresolvable + ErrUnboundImmediate, "n2": unresolvable + ErrUnboundImmediate}},
		{"claim without class is immediate", podWith("data"), []runtime.Object{claim("data", "", "")},
			map[string]string{"n1": unresolvable + ErrUnboundImmediate, "n2": unresolvable + ErrUnboundImmediate}},
		{"claim of a class that does not exist waits as immediate", podWith("data"), []runtime.Object{claim("data", "manual", "")},
			map[string]string{"n1": unresolvable + ErrUnboundImmediate, "n2": unresolvable + ErrUnboundImmediate}},
		{"missing claim", podWith("gone"), nil,
			map[string]string{"n1": unresolvable + `persistentvolumeclaim "gone" not found`, "n2": unresolvable + `persistentvolumeclaim "gone" not found`}},
		{"bound to a missing volume", podWith("bound"), []runtime.Object{claim("bound", "local-path", "pv-gone")},
			map[string]string{"n1": unresolvable + ErrReasonPVNotExist, "n2": unresolvable + ErrReasonPVNotExist}},
		{"generic ephemeral claim", ephemeral, []runtime.Object{claim("p-scratch", "local-path", "")}, map[string]string{"n1": "", "n2": ""}},
		{"capacity published: only where a capacity of the class holds the claim", podWith("data"),
			[]runtime.Object{claim("data", "csi", ""), capacityDriver(true), capacity("csi", "a", "2Gi", ""), capacity("csi", "b", "500Mi", "")},
			map[string]string{"n1": "", "n2": unresolvable + ErrReasonNotEnoughSpace}},
		{"capacity published: maximumVolumeSize wins over capacity", podWith("data"),
			[]runtime.Object{claim("data", "csi", ""), capacityDriver(true), capacity("csi", "a", "10Gi", "500Mi"), capacity("csi", "b", "500Mi", "2Gi")},
			map[string]string{"n1": unresolvable + ErrReasonNotEnoughSpace, "n2": ""}},
		{"capacity published: another class's capacity does not count", podWith("data"),
			[]runtime.Object{claim("data", "csi", ""), capacityDriver(true), capacity("other", "a", "2Gi", "")},
			map[string]string{"n1": unresolvable + ErrReasonNotEnoughSpace, "n2": unresolvable + ErrReasonNotEnoughSpace}},
		{"capacity published: none yet is no room", podWith("data"), []runtime.Object{claim("data", "csi", ""), capacityDriver(true)},
			map[string]string{"n1": unresolvable + ErrReasonNotEnoughSpace, "n2": unresolvable + ErrReasonNotEnoughSpace}},
		{"driver without storageCapacity: not checked", podWith("data"), []runtime.Object{claim("data", "csi", ""), capacityDriver(false)},
			map[string]string{"n1": "", "n2": ""}},
		{"no CSIDriver: not checked", podWith("data"), []runtime.Object{claim("data", "csi", ""), capacity("csi", "a", "1Mi", "")},
			map[string]string{"n1": "", "n2": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _, _ := newPlugin(t, append(slices.Clone(classes), tt.extra...)...)
			got := st.Verdicts(st.RunFilter(b, tt.pod, nodes, nil))
			for n, want := range tt.want {
				if got[n] != want {
					t.Errorf("%s: got %q want %q", n, got[n], want)
				}
			}
		})
	}
}

// runToPreBind runs PreFilter, Filter on node, Reserve and PreBind.
func runToPreBind(t *testing.T, b *VolumeBinding, pod *v1.Pod, node *v1.Node) *framework.Status {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if s := b.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	if s := b.Filter(ctx, state, pod, ni); !s.IsSuccess() {
		t.Fatalf("Filter: %v", s)
	}
	if s := b.Reserve(ctx, state, pod, node.Name); !s.IsSuccess() {
		t.Fatalf("Reserve: %v", s)
	}
	return b.PreBind(ctx, state, pod, node.Name)
}

func writes(client *fake.Clientset) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a)
		}
	}
	return out
}

func TestPreBindProvision(t *testing.T) {
	node := st.MakeNode().Name("n1").Label(v1.LabelHostname, "n1").Obj()
	pvc := claim("data", "local-path", "")
	b, client, factory := newPlugin(t, class("local-path", "skiff.dev/local-path", storagev1.VolumeBindingWaitForFirstConsumer), pvc)
	// The provisioner and the binder finish while PreBind waits: the claim in the cache is bound
	// as soon as the scheduler has asked for it.
	client.PrependReactor("update", "persistentvolumeclaims", func(action clienttesting.Action) (bool, runtime.Object, error) {
		updated := action.(clienttesting.UpdateAction).GetObject().(*v1.PersistentVolumeClaim).DeepCopy()
		if updated.Annotations[AnnSelectedNode] != "n1" {
			t.Errorf("claim updated without selected-node n1: %v", updated.Annotations)
		}
		bound := updated.DeepCopy()
		bound.Spec.VolumeName, bound.Status.Phase = "pvc-uid-data", v1.ClaimBound
		if err := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Update(bound); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
	if s := runToPreBind(t, b, podWith("data"), node); !s.IsSuccess() {
		t.Fatalf("PreBind: %v", s)
	}
	got := writes(client)
	if len(got) != 1 || got[0].GetVerb() != "update" || got[0].GetResource().Resource != "persistentvolumeclaims" {
		t.Fatalf("writes = %v", got)
	}
}

func TestPreBindStaticVolume(t *testing.T) {
	node := st.MakeNode().Name("n1").Label(v1.LabelHostname, "n1").Obj()
	pvc := claim("data", "static", "")
	b, client, factory := newPlugin(t, class("static", noProvisioner, storagev1.VolumeBindingWaitForFirstConsumer), pvc, volume("pv-s", "static", "5Gi", "n1"))
	client.PrependReactor("update", "persistentvolumes", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pv := action.(clienttesting.UpdateAction).GetObject().(*v1.PersistentVolume)
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != "data" || ref.UID != "uid-data" {
			t.Errorf("volume claimRef = %+v", ref)
		}
		bound := pvc.DeepCopy()
		bound.Spec.VolumeName, bound.Status.Phase = pv.Name, v1.ClaimBound
		if err := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Update(bound); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
	if s := runToPreBind(t, b, podWith("data"), node); !s.IsSuccess() {
		t.Fatalf("PreBind: %v", s)
	}
	got := writes(client)
	if len(got) != 1 || got[0].GetResource().Resource != "persistentvolumes" {
		t.Fatalf("writes = %v", got)
	}
}

func TestPreBindClaimRecreated(t *testing.T) {
	node := st.MakeNode().Name("n1").Label(v1.LabelHostname, "n1").Obj()
	pvc := claim("data", "local-path", "")
	b, client, factory := newPlugin(t, class("local-path", "skiff.dev/local-path", storagev1.VolumeBindingWaitForFirstConsumer), pvc)
	client.PrependReactor("update", "persistentvolumeclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		other := pvc.DeepCopy()
		other.UID = "another"
		if err := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Update(other); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
	if s := runToPreBind(t, b, podWith("data"), node); s.IsSuccess() {
		t.Fatal("PreBind succeeded for a claim that was deleted and made again")
	}
}

// TestAllBoundProvisioningReset: a claim handed back by its provisioner (selected-node removed
// after the cache showed it) ends the wait with an error; before the cache shows the annotation,
// its absence is only the cache lagging behind PreBind's own write.
func TestAllBoundProvisioningReset(t *testing.T) {
	pvc := claim("data", "local-path", "")
	b, _, factory := newPlugin(t, pvc)
	indexer := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	w := []*waitingClaim{{claim: pvc, provisioned: true}}
	steps := []struct {
		annotations map[string]string
		wantErr     bool
	}{
		{nil, false}, // the cache has not seen PreBind's write yet
		{map[string]string{AnnSelectedNode: "n1"}, false},
		{nil, true}, // the provisioner gave the claim back
	}
	for i, step := range steps {
		cur := pvc.DeepCopy()
		cur.Annotations = step.annotations
		if err := indexer.Update(cur); err != nil {
			t.Fatal(err)
		}
		done, err := b.allBound(w)
		if done || (err != nil) != step.wantErr {
			t.Fatalf("step %d: done %v err %v, want error %v", i, done, err, step.wantErr)
		}
	}
}

// TestAllBoundResetBeforeSeen: a provisioner may hand the claim back before the cache ever shows
// PreBind's selected-node (the CSI mock spec 'storage capacity exhausted, late binding, with
// topology': CreateVolume fails at once with ResourceExhausted); a cached version at least as new
// as PreBind's write without the annotation is that reset, an older one only the cache lagging.
func TestAllBoundResetBeforeSeen(t *testing.T) {
	pvc := claim("data", "local-path", "")
	pvc.ResourceVersion = "9"
	b, _, factory := newPlugin(t, pvc)
	indexer := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	w := []*waitingClaim{{claim: pvc, provisioned: true, written: "10"}}
	for i, step := range []struct {
		version string
		wantErr bool
	}{
		{"9", false}, // the cache has not seen PreBind's write yet
		{"12", true}, // written at 10, handed back at 12 (11 never reached the cache)
	} {
		cur := pvc.DeepCopy()
		cur.ResourceVersion = step.version
		if err := indexer.Update(cur); err != nil {
			t.Fatal(err)
		}
		done, err := b.allBound(w)
		if done || (err != nil) != step.wantErr {
			t.Fatalf("step %d: done %v err %v, want error %v", i, done, err, step.wantErr)
		}
	}
}
