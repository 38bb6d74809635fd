package pvbinder

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func volume(name, class, size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"size": size}},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName: class, AccessModes: modes,
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
}

func claim(name, class, size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class, AccessModes: modes,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
}

func TestMatch(t *testing.T) {
	rwo := corev1.ReadWriteOnce
	small, big := volume("small", "local", "1Gi", rwo), volume("big", "local", "10Gi", rwo)
	other := volume("other", "fast", "5Gi", rwo)
	taken := volume("taken", "local", "2Gi", rwo)
	taken.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "someone", UID: "x"}
	mine := volume("mine", "local", "20Gi", rwo)
	mine.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "c", UID: "uid-c"}
	rwx := volume("rwx", "local", "3Gi", corev1.ReadWriteMany)
	named := claim("c", "local", "1Gi", rwo)
	named.Spec.VolumeName = "big"
	selected := claim("c", "local", "1Gi", rwo)
	selected.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"size": "10Gi"}}
	tests := []struct {
		name    string
		pvc     *corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		want    string
	}{
		{"smallest that fits", claim("c", "local", "500Mi", rwo), []*corev1.PersistentVolume{big, small}, "small"},
		{"too small skipped", claim("c", "local", "2Gi", rwo), []*corev1.PersistentVolume{small, big}, "big"},
		{"other class skipped", claim("c", "fast", "1Gi", rwo), []*corev1.PersistentVolume{small, other}, "other"},
		{"claimed volume skipped", claim("c", "local", "2Gi", rwo), []*corev1.PersistentVolume{taken}, ""},
		{"access mode must be offered", claim("c", "local", "1Gi", corev1.ReadWriteMany), []*corev1.PersistentVolume{small, rwx}, "rwx"},
		{"named volume", named, []*corev1.PersistentVolume{small, big}, "big"},
		{"selector", selected, []*corev1.PersistentVolume{small, big}, "big"},
		{"interrupted bind resumes", claim("c", "local", "1Gi", rwo), []*corev1.PersistentVolume{small, mine}, "mine"},
		{"nothing fits", claim("c", "local", "50Gi", rwo), []*corev1.PersistentVolume{small, big}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Match(tt.pvc, tt.volumes)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Fatalf("matched %q, want %q", name, tt.want)
			}
		})
	}
}

func TestSyncBindsBothSides(t *testing.T) {
	pv := volume("data", "local", "1Gi", corev1.ReadWriteOnce)
	pv.Spec.VolumeAttributesClassName = ptr.To("fast")
	pvc := claim("c", "local", "1Gi", corev1.ReadWriteOnce)
	env := ctrltest.NewEnv(pv, pvc)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumes().Informer(), pv)
	ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumeClaims().Informer(), pvc)
	if err := c.Sync(context.Background(), "ns/c"); err != nil {
		t.Fatal(err)
	}
	writes := env.Writes()
	want := []string{"update persistentvolumes data", "update persistentvolumes/status data", "update persistentvolumeclaims c", "update persistentvolumeclaims/status c"}
	if got := ctrltest.Describe(writes); !slices.Equal(got, want) {
		t.Fatalf("actions %q, want %q", got, want)
	}
	obj := func(i int) runtime.Object { return writes[i].(clienttesting.UpdateAction).GetObject() }
	if ref := obj(0).(*corev1.PersistentVolume).Spec.ClaimRef; ref == nil || ref.UID != "uid-c" || ref.Name != "c" {
		t.Fatalf("claimRef %+v", ref)
	}
	if p := obj(1).(*corev1.PersistentVolume).Status.Phase; p != corev1.VolumeBound {
		t.Fatalf("volume phase %s", p)
	}
	if v := obj(2).(*corev1.PersistentVolumeClaim).Spec.VolumeName; v != "data" {
		t.Fatalf("claim volumeName %q", v)
	}
	st := obj(3).(*corev1.PersistentVolumeClaim).Status
	if st.Phase != corev1.ClaimBound || st.Capacity.Storage().String() != "1Gi" || len(st.AccessModes) != 1 {
		t.Fatalf("claim status %+v", st)
	}
	// Binding gives the claim its volume's attributes class.
	if got := ptr.Deref(st.CurrentVolumeAttributesClassName, ""); got != "fast" {
		t.Fatalf("claim's current volume attributes class %q, want the volume's fast", got)
	}

	bound := pvc.DeepCopy()
	bound.Status.Phase, bound.Spec.VolumeName = corev1.ClaimBound, "data"
	boundPV := obj(0).(*corev1.PersistentVolume)
	env = ctrltest.NewEnv(boundPV, bound)
	c, _ = New(env.Deps)
	ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumes().Informer(), boundPV)
	ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumeClaims().Informer(), bound)
	if err := c.Sync(context.Background(), "ns/c"); err != nil || len(env.Writes()) != 0 {
		t.Fatalf("bound claim touched: %v %q", err, ctrltest.Describe(env.Writes()))
	}
}

func TestBoundClaimLost(t *testing.T) {
	pvc := claim("c", "local", "1Gi")
	pvc.Spec.VolumeName = "data"
	mine := volume("data", "local", "1Gi")
	mine.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "c", UID: pvc.UID}
	other := mine.DeepCopy()
	other.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "d", UID: "uid-d"}
	unnamed := pvc.DeepCopy()
	unnamed.Spec.VolumeName = ""
	for _, tc := range []struct {
		name   string
		pvc    *corev1.PersistentVolumeClaim
		pv     *corev1.PersistentVolume
		reason string
	}{
		{"its volume names it", pvc, mine, ""},
		{"its volume not yet pointed at a claim", pvc, volume("data", "local", "1Gi"), ""},
		{"its volume went to another claim (a populator's rebind)", pvc, other, "ClaimMisbound"},
		{"its volume is gone", pvc, nil, "ClaimLost"},
		{"it names no volume", unnamed, mine, "ClaimLost"},
	} {
		lost, reason, _ := BoundClaimLost(tc.pvc, tc.pv)
		if lost != (tc.reason != "") || reason != tc.reason {
			t.Errorf("%s: lost %v (%q), want %q", tc.name, lost, reason, tc.reason)
		}
	}
}

// TestSyncMarksAMisboundClaimLost: a volume populator's scratch claim, once its volume is rebound
// to the user's claim, becomes Lost (the populator waits for that to clean up), and stays so.
func TestSyncMarksAMisboundClaimLost(t *testing.T) {
	prime := claim("prime", "local", "1Gi")
	prime.Spec.VolumeName, prime.Status.Phase = "data", corev1.ClaimBound
	pv := volume("data", "local", "1Gi")
	pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "user", UID: "uid-user"}
	env := ctrltest.NewEnv(pv, prime)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumes().Informer(), pv)
	ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumeClaims().Informer(), prime)
	if err := c.Sync(context.Background(), "ns/prime"); err != nil {
		t.Fatal(err)
	}
	writes := env.Writes()
	if got, want := ctrltest.Describe(writes), []string{"update persistentvolumeclaims/status prime"}; !slices.Equal(got, want) {
		t.Fatalf("actions %q, want %q", got, want)
	}
	lost := writes[0].(clienttesting.UpdateAction).GetObject().(*corev1.PersistentVolumeClaim)
	if lost.Status.Phase != corev1.ClaimLost {
		t.Fatalf("phase %s, want Lost", lost.Status.Phase)
	}
	env = ctrltest.NewEnv(pv, lost)
	c, _ = New(env.Deps)
	ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumes().Informer(), pv)
	ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumeClaims().Informer(), lost)
	if err := c.Sync(context.Background(), "ns/prime"); err != nil || len(env.Writes()) != 0 {
		t.Fatalf("a Lost claim was touched: %v %q", err, ctrltest.Describe(env.Writes()))
	}
}

func TestVolumePhase(t *testing.T) {
	pvc := claim("c", "local", "1Gi")
	lookup := func(ns, name string) (*corev1.PersistentVolumeClaim, bool) {
		if ns == "ns" && name == "c" {
			return pvc, true
		}
		return nil, false
	}
	tests := []struct {
		name string
		ref  *corev1.ObjectReference
		want corev1.PersistentVolumePhase
	}{
		{"unclaimed", nil, corev1.VolumeAvailable},
		{"pre-bound, waiting for its claim", &corev1.ObjectReference{Namespace: "ns", Name: "later"}, corev1.VolumeAvailable},
		{"bound", &corev1.ObjectReference{Namespace: "ns", Name: "c", UID: "uid-c"}, corev1.VolumeBound},
		{"claim deleted", &corev1.ObjectReference{Namespace: "ns", Name: "gone", UID: "uid-gone"}, corev1.VolumeReleased},
		{"claim recreated", &corev1.ObjectReference{Namespace: "ns", Name: "c", UID: "old"}, corev1.VolumeReleased},
	}
	for _, tt := range tests {
		pv := volume("v", "local", "1Gi")
		pv.Spec.ClaimRef = tt.ref
		if got := VolumePhase(pv, lookup); got != tt.want {
			t.Errorf("%s: phase %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestSyncDelayedBinding: a claim of a WaitForFirstConsumer class is bound only to a volume pointed
// at it (by the scheduler, or provisioned for it), never to any available volume.
func TestSyncDelayedBinding(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "skiff.dev/local-path", VolumeBindingMode: &wffc}
	free := volume("free", "local", "1Gi", corev1.ReadWriteOnce)
	provisioned := volume("pvc-uid-c", "local", "1Gi", corev1.ReadWriteOnce)
	provisioned.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "c", UID: "uid-c"}
	tests := []struct {
		name    string
		volumes []*corev1.PersistentVolume
		want    []string
		events  int
	}{
		{"available volume is not taken", []*corev1.PersistentVolume{free}, nil, 1},
		{"node selected: waits for the provisioner", []*corev1.PersistentVolume{free}, []string{"update persistentvolumeclaims c"}, 1},
		{"volume made for the claim is bound", []*corev1.PersistentVolume{free, provisioned},
			[]string{"update persistentvolumes/status pvc-uid-c", "update persistentvolumeclaims c", "update persistentvolumeclaims/status c"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pvc := claim("c", "local", "1Gi", corev1.ReadWriteOnce)
			if strings.HasPrefix(tt.name, "node selected") {
				pvc.Annotations = map[string]string{AnnSelectedNode: "n1"}
			}
			objs := []runtime.Object{class, pvc}
			for _, pv := range tt.volumes {
				objs = append(objs, pv)
			}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Storage().V1().StorageClasses().Informer(), class)
			ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumeClaims().Informer(), pvc)
			for _, pv := range tt.volumes {
				ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumes().Informer(), pv)
			}
			if err := c.Sync(context.Background(), "ns/c"); err != nil {
				t.Fatal(err)
			}
			if got := ctrltest.Describe(env.Writes()); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			if got := len(env.Recorder.Events); got != tt.events {
				t.Fatalf("%d events, want %d", got, tt.events)
			}
		})
	}
}

func TestProvisionerFor(t *testing.T) {
	for _, tt := range []struct {
		class *storagev1.StorageClass
		want  string
	}{
		{nil, ""},
		{&storagev1.StorageClass{Provisioner: "kubernetes.io/no-provisioner"}, ""},
		{&storagev1.StorageClass{Provisioner: "skiff.dev/local-path"}, "skiff.dev/local-path"},
	} {
		if got := ProvisionerFor(tt.class); got != tt.want {
			t.Errorf("ProvisionerFor(%v) = %q, want %q", tt.class, got, tt.want)
		}
	}
}

// TestSyncExternalProvisioner: a claim no volume satisfies is handed to its class's provisioner as
// upstream's persistent volume controller hands it to an external one (csi-provisioner acts only on
// claims whose volume.kubernetes.io/storage-provisioner names it, and for a WaitForFirstConsumer
// class only once volume.kubernetes.io/selected-node is set), and the volume it makes, pointed at
// the claim, is bound.
func TestSyncExternalProvisioner(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	const driver = "hostpath.csi.k8s.io"
	made := volume("pvc-uid-c", "csi", "1Gi", corev1.ReadWriteOnce)
	made.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "c", UID: "uid-c"}
	made.Status.Phase = corev1.VolumePending
	tests := []struct {
		name        string
		mode        storagev1.VolumeBindingMode
		provisioner string
		annotations map[string]string
		volumes     []*corev1.PersistentVolume
		want        []string
		annotated   bool
		event       string
	}{
		{"immediate: handed to the driver", immediate, driver, nil, nil, []string{"update persistentvolumeclaims c"}, true, "ExternalProvisioning"},
		{"already handed: nothing", immediate, driver,
			map[string]string{AnnStorageProvisioner: driver, AnnBetaStorageProvisioner: driver}, nil, nil, false, ""},
		{"first consumer not scheduled: waits", wffc, driver, nil, nil, nil, false, "WaitForFirstConsumer"},
		{"first consumer scheduled: handed to the driver", wffc, driver, map[string]string{AnnSelectedNode: "n1"}, nil,
			[]string{"update persistentvolumeclaims c"}, true, "ExternalProvisioning"},
		{"statically provisioned class: nobody to hand it to", immediate, "kubernetes.io/no-provisioner", nil, nil, nil, false, ""},
		{"the driver's volume is bound", wffc, driver, map[string]string{AnnSelectedNode: "n1", AnnStorageProvisioner: driver}, []*corev1.PersistentVolume{made},
			[]string{"update persistentvolumes/status pvc-uid-c", "update persistentvolumeclaims c", "update persistentvolumeclaims/status c"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "csi"}, Provisioner: tt.provisioner, VolumeBindingMode: &tt.mode}
			pvc := claim("c", "csi", "1Gi", corev1.ReadWriteOnce)
			pvc.Annotations = tt.annotations
			objs := []runtime.Object{class, pvc}
			for _, pv := range tt.volumes {
				objs = append(objs, pv)
			}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Storage().V1().StorageClasses().Informer(), class)
			ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumeClaims().Informer(), pvc)
			for _, pv := range tt.volumes {
				ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumes().Informer(), pv)
			}
			if err := c.Sync(context.Background(), "ns/c"); err != nil {
				t.Fatal(err)
			}
			writes := env.Writes()
			if got := ctrltest.Describe(writes); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			if tt.annotated {
				a := writes[0].(clienttesting.UpdateAction).GetObject().(*corev1.PersistentVolumeClaim).Annotations
				if a[AnnStorageProvisioner] != driver || a[AnnBetaStorageProvisioner] != driver {
					t.Fatalf("claim annotations %v", a)
				}
			}
			events := env.Events()
			if tt.event == "" && len(events) != 0 || tt.event != "" && (len(events) != 1 || !strings.Contains(events[0], tt.event)) {
				t.Fatalf("events %q, want %q", events, tt.event)
			}
		})
	}
}
