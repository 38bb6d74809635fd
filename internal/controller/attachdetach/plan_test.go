package attachdetach

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

const driver = "hostpath.csi.k8s.io"

// csiVolume is a CSI volume bound to claim ns/<claim> (uid "uid-<claim>").
func csiVolume(name, claim string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:            modes,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-" + name}},
			ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: claim, UID: types.UID("uid-" + claim)},
		},
	}
}

func boundClaim(name, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: volume},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

func withClaim(pod *corev1.Pod, claim string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return pod
}

func lookup(claims []*corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, drivers ...*storagev1.CSIDriver) Lookup {
	return Lookup{
		Claim: func(ns, name string) *corev1.PersistentVolumeClaim {
			i := slices.IndexFunc(claims, func(c *corev1.PersistentVolumeClaim) bool { return c.Namespace == ns && c.Name == name })
			if i < 0 {
				return nil
			}
			return claims[i]
		},
		Volume: func(name string) *corev1.PersistentVolume {
			i := slices.IndexFunc(volumes, func(v *corev1.PersistentVolume) bool { return v.Name == name })
			if i < 0 {
				return nil
			}
			return volumes[i]
		},
		Driver: func(name string) *storagev1.CSIDriver {
			i := slices.IndexFunc(drivers, func(d *storagev1.CSIDriver) bool { return d.Name == name })
			if i < 0 {
				return nil
			}
			return drivers[i]
		},
	}
}

func TestDesiredVolumes(t *testing.T) {
	rwo := corev1.ReadWriteOnce
	data, shared := csiVolume("pv-data", "data", rwo), csiVolume("pv-shared", "shared", corev1.ReadWriteMany)
	hostPath := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-host"},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{UID: "uid-host"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}}}
	stolen := csiVolume("pv-stolen", "other", rwo) // bound to another claim than the one naming it
	pending := boundClaim("pending", "")
	pending.Status.Phase = corev1.ClaimPending
	claims := []*corev1.PersistentVolumeClaim{boundClaim("data", "pv-data"), boundClaim("shared", "pv-shared"),
		boundClaim("host", "pv-host"), boundClaim("thief", "pv-stolen"), pending}
	volumes := []*corev1.PersistentVolume{data, shared, hostPath, stolen}

	owner := ctrltest.MakePod("eph").Running().Obj()
	owner.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
	ephClaim := boundClaim("eph-scratch", "pv-eph")
	ephClaim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "eph", UID: owner.UID, Controller: ptr.To(true)}}
	strangerClaim := ephClaim.DeepCopy()
	strangerClaim.OwnerReferences = nil
	eph := csiVolume("pv-eph", "eph-scratch", rwo)

	noAttach := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		lookup  Lookup
		want    []string // "pv:multi:pods"
		wantPod int
	}{
		{"a bound CSI claim", []*corev1.Pod{withClaim(ctrltest.MakePod("a").Running().Obj(), "data")}, lookup(claims, volumes),
			[]string{"pv-data"}, 1},
		{"shared by two pods, listed once", []*corev1.Pod{
			withClaim(ctrltest.MakePod("a").Running().Obj(), "shared"), withClaim(ctrltest.MakePod("b").Running().Obj(), "shared")},
			lookup(claims, volumes), []string{"pv-shared"}, 2},
		{"not CSI, unbound, missing or bound elsewhere: none", []*corev1.Pod{withClaim(withClaim(withClaim(withClaim(
			ctrltest.MakePod("a").Running().Obj(), "host"), "pending"), "missing"), "thief")}, lookup(claims, volumes), nil, 0},
		{"driver without attach", []*corev1.Pod{withClaim(ctrltest.MakePod("a").Running().Obj(), "data")},
			lookup(claims, volumes, noAttach), nil, 0},
		{"succeeded pod holds none", []*corev1.Pod{withClaim(ctrltest.MakePod("a").Phase(corev1.PodSucceeded).Obj(), "data")},
			lookup(claims, volumes), nil, 0},
		{"deleted pod with a running container still holds it", []*corev1.Pod{withClaim(running(ctrltest.MakePod("a").Running().Deleting(ctrltest.Epoch()).Obj()), "data")},
			lookup(claims, volumes), []string{"pv-data"}, 1},
		{"deleted pod whose containers stopped holds none", []*corev1.Pod{withClaim(stopped(ctrltest.MakePod("a").Running().Deleting(ctrltest.Epoch()).Obj()), "data")},
			lookup(claims, volumes), nil, 0},
		{"generic ephemeral volume owned by its pod", []*corev1.Pod{owner}, lookup([]*corev1.PersistentVolumeClaim{ephClaim}, []*corev1.PersistentVolume{eph}),
			[]string{"pv-eph"}, 1},
		{"ephemeral claim the pod does not own", []*corev1.Pod{owner}, lookup([]*corev1.PersistentVolumeClaim{strangerClaim}, []*corev1.PersistentVolume{eph}),
			nil, 0},
		{"inline CSI volume is never attached", []*corev1.Pod{inlineCSI(ctrltest.MakePod("a").Running().Obj())}, lookup(claims, volumes), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DesiredVolumes(tt.pods, tt.lookup)
			var names []string
			pods := 0
			for _, v := range got {
				names = append(names, v.PV)
				pods += len(v.Pods)
				if v.Driver != driver || v.Handle != "h-"+v.PV {
					t.Errorf("volume %+v", v)
				}
			}
			if !slices.Equal(names, tt.want) || pods != tt.wantPod {
				t.Fatalf("volumes %q with %d pods, want %q with %d", names, pods, tt.want, tt.wantPod)
			}
		})
	}
	if got := DesiredVolumes([]*corev1.Pod{withClaim(ctrltest.MakePod("a").Running().Obj(), "shared"), withClaim(ctrltest.MakePod("b").Running().Obj(), "data")},
		lookup(claims, volumes)); !got[0].MultiAttach || got[1].MultiAttach {
		t.Errorf("multi-attach: ReadWriteMany %v, ReadWriteOnce %v", got[0].MultiAttach, got[1].MultiAttach)
	}
}

func running(p *corev1.Pod) *corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return p
}

func stopped(p *corev1.Pod) *corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
	return p
}

func inlineCSI(p *corev1.Pod) *corev1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "inline", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: driver}}})
	return p
}

// node is a managed, Ready node "n1" with volumes in use.
func node(mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{volumeutil.AnnControllerManagedAttachDetach: "true"}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func inUse(pvs ...string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		for _, pv := range pvs {
			n.Status.VolumesInUse = append(n.Status.VolumesInUse, volumeutil.CSIUniqueVolumeName(driver, "h-"+pv))
		}
	}
}

func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }

func outOfService(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: TaintOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
}

func unmanaged(n *corev1.Node) { n.Annotations = nil }

func want(pv string, multi bool) Volume {
	return Volume{PV: pv, Driver: driver, Handle: "h-" + pv, MultiAttach: multi}
}

// attachment is the VolumeAttachment of pv to nodeName, attached or not.
func attachment(pv, nodeName string, attached bool) Attachment {
	v := want(pv, false)
	return Attachment{
		VA: &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: v.AttachmentName(nodeName)},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: nodeName,
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
			Status: storagev1.VolumeAttachmentStatus{Attached: attached},
		},
		Unique: volumeutil.CSIUniqueVolumeName(driver, "h-"+pv),
	}
}

func deleting(a Attachment) Attachment {
	a.VA.DeletionTimestamp = &metav1.Time{Time: ctrltest.Epoch()}
	return a
}

func TestDecide(t *testing.T) {
	now := ctrltest.Epoch()
	nameOf := func(pv string) string { return volumeutil.AttachmentName("h-"+pv, driver, "n1") }
	tests := []struct {
		name        string
		node        *corev1.Node
		desired     []Volume
		attachments []Attachment
		elsewhere   map[string][]string
		requested   map[string]time.Time
		create      []string // volumes
		delete      []string // volumes
		attached    []string // volumes in status.volumesAttached; nil: no node status
		waiting     []string // volumes whose detach waits
		multi       []string
		requeue     time.Duration
	}{
		{name: "a volume to attach", node: node(), desired: []Volume{want("a", false)}, create: []string{"a"}, attached: []string{}},
		{name: "attached and wanted: listed on the node", node: node(), desired: []Volume{want("a", false)},
			attachments: []Attachment{attachment("a", "n1", true)}, attached: []string{"a"}},
		{name: "not yet attached: not listed", node: node(), desired: []Volume{want("a", false)},
			attachments: []Attachment{attachment("a", "n1", false)}, attached: []string{}},
		{name: "unmanaged node: nothing attached", node: node(unmanaged), desired: []Volume{want("a", false)}, attached: []string{}},
		{name: "unneeded and unmounted: detached", node: node(), attachments: []Attachment{attachment("a", "n1", true)},
			delete: []string{"a"}, attached: []string{}},
		{name: "unneeded but mounted: waits", node: node(inUse("a")), attachments: []Attachment{attachment("a", "n1", true)},
			waiting: []string{"a"}, attached: []string{"a"}},
		{name: "mounted on a node not Ready: waits up to 6 minutes", node: node(inUse("a"), notReady),
			attachments: []Attachment{attachment("a", "n1", true)}, requested: map[string]time.Time{nameOf("a"): now.Add(-time.Minute)},
			waiting: []string{"a"}, attached: []string{"a"}, requeue: 5*time.Minute + time.Second},
		{name: "mounted on a node not Ready for over 6 minutes: forced", node: node(inUse("a"), notReady),
			attachments: []Attachment{attachment("a", "n1", true)}, requested: map[string]time.Time{nameOf("a"): now.Add(-7 * time.Minute)},
			delete: []string{"a"}, attached: []string{}},
		{name: "mounted on a Ready node for long: still waits", node: node(inUse("a")),
			attachments: []Attachment{attachment("a", "n1", true)}, requested: map[string]time.Time{nameOf("a"): now.Add(-time.Hour)},
			waiting: []string{"a"}, attached: []string{"a"}},
		{name: "out-of-service node: detached at once", node: node(inUse("a"), outOfService),
			attachments: []Attachment{attachment("a", "n1", true)}, delete: []string{"a"}, attached: []string{}},
		{name: "deleted node: forced after 6 minutes", attachments: []Attachment{attachment("a", "n1", true)},
			requested: map[string]time.Time{nameOf("a"): now.Add(-7 * time.Minute)}, delete: []string{"a"}},
		{name: "deleted node: waits before", attachments: []Attachment{attachment("a", "n1", true)},
			waiting: []string{"a"}, requeue: MaxWaitForUnmount + time.Second},
		{name: "being detached, wanted again: waits for the delete", node: node(), desired: []Volume{want("a", false)},
			attachments: []Attachment{deleting(attachment("a", "n1", true))}, attached: []string{}},
		{name: "being detached, unneeded: nothing more", node: node(), attachments: []Attachment{deleting(attachment("a", "n1", true))}, attached: []string{}},
		{name: "single-node volume attached elsewhere: Multi-Attach", node: node(), desired: []Volume{want("a", false)},
			elsewhere: map[string][]string{"a": {"n2"}}, multi: []string{"a"}, attached: []string{}},
		{name: "multi-node volume attached elsewhere: attached here too", node: node(), desired: []Volume{want("a", true)},
			elsewhere: map[string][]string{"a": {"n2"}}, create: []string{"a"}, attached: []string{}},
		{name: "wanted again: the wait is forgotten", node: node(inUse("a")), desired: []Volume{want("a", false)},
			attachments: []Attachment{attachment("a", "n1", true)}, requested: map[string]time.Time{nameOf("a"): now.Add(-time.Hour)},
			attached: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := Decide(NodeState{NodeName: "n1", Node: tt.node, Desired: tt.desired, Attachments: tt.attachments,
				Elsewhere: tt.elsewhere, DetachRequested: tt.requested, Now: now})
			var created, deleted, waiting, multi []string
			for _, va := range plan.Create {
				pv := *va.Spec.Source.PersistentVolumeName
				if va.Name != nameOf(pv) || va.Spec.Attacher != driver || va.Spec.NodeName != "n1" {
					t.Errorf("created %+v", va)
				}
				created = append(created, pv)
			}
			for _, pv := range []string{"a", "b"} {
				if slices.Contains(plan.Delete, nameOf(pv)) {
					deleted = append(deleted, pv)
				}
				if _, ok := plan.DetachRequested[nameOf(pv)]; ok {
					waiting = append(waiting, pv)
				}
			}
			for _, e := range plan.MultiAttach {
				multi = append(multi, e.Volume.PV)
			}
			check := func(what string, got, want []string) {
				if !slices.Equal(got, want) {
					t.Errorf("%s %q, want %q", what, got, want)
				}
			}
			check("created", created, tt.create)
			check("deleted", deleted, tt.delete)
			check("waiting", waiting, tt.waiting)
			check("multi-attach", multi, tt.multi)
			var attached []string
			if plan.VolumesAttached != nil {
				attached = []string{}
			}
			for _, v := range plan.VolumesAttached {
				attached = append(attached, string(v.Name)[len(volumeutil.CSIUniqueVolumeName(driver, "h-")):])
			}
			check("volumesAttached", attached, tt.attached)
			if plan.RequeueAfter != tt.requeue {
				t.Errorf("requeue after %s, want %s", plan.RequeueAfter, tt.requeue)
			}
		})
	}
}

// TestDecideKeepsFirstRequest: a detach waiting for an unmount keeps the time it was first asked
// for, so the 6 minutes run from then and not from the latest look.
func TestDecideKeepsFirstRequest(t *testing.T) {
	now := ctrltest.Epoch()
	s := NodeState{NodeName: "n1", Node: node(inUse("a"), notReady), Attachments: []Attachment{attachment("a", "n1", true)}, Now: now}
	first := Decide(s)
	s.DetachRequested, s.Now = first.DetachRequested, now.Add(4*time.Minute)
	second := Decide(s)
	if len(second.Delete) != 0 || second.DetachRequested[attachment("a", "n1", true).VA.Name] != now {
		t.Fatalf("after 4 minutes: %+v", second)
	}
	s.DetachRequested, s.Now = second.DetachRequested, now.Add(6*time.Minute+time.Second)
	if third := Decide(s); len(third.Delete) != 1 {
		t.Fatalf("after 6 minutes the detach is not forced: %+v", third)
	}
}
