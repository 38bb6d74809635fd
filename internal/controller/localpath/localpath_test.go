package localpath

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func claim(name string, annotations map[string]string) *corev1.PersistentVolumeClaim {
	class := ClassName
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Annotations: annotations},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
}

func node(name, hostname string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: hostname}}}
}

func newController(t *testing.T, objs ...runtime.Object) (*Controller, *ctrltest.Env) {
	t.Helper()
	env := ctrltest.NewEnv(objs...)
	c, err := New(env.Deps, Config{Dir: "/var/lib/skiff/storage", HelperImage: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	core, storage := env.Factory.Core().V1(), env.Factory.Storage().V1()
	for _, o := range objs {
		switch o.(type) {
		case *corev1.PersistentVolumeClaim:
			ctrltest.Seed(t, core.PersistentVolumeClaims().Informer(), o)
		case *corev1.PersistentVolume:
			ctrltest.Seed(t, core.PersistentVolumes().Informer(), o)
		case *storagev1.StorageClass:
			ctrltest.Seed(t, storage.StorageClasses().Informer(), o)
		case *corev1.Node:
			ctrltest.Seed(t, core.Nodes().Informer(), o)
		case *corev1.Pod:
			ctrltest.Seed(t, core.Pods().Informer(), o)
		}
	}
	return c, env
}

func TestSyncClaim(t *testing.T) {
	immediate := DefaultStorageClass()
	immediate.Name = "local-now"
	mode := storagev1.VolumeBindingImmediate
	immediate.VolumeBindingMode = &mode
	other := DefaultStorageClass()
	other.Name, other.Provisioner = "other", "example.com/nfs"
	selected := map[string]string{AnnSelectedNode: "worker-1"}
	bound := claim("bound", selected)
	bound.Spec.VolumeName = "pv-x"
	bound.Status.Phase = corev1.ClaimBound
	nowClass := claim("now", nil)
	nowClass.Spec.StorageClassName = &immediate.Name
	otherClass := claim("nfs", selected)
	otherClass.Spec.StorageClassName = &other.Name
	existing := NewVolume(claim("again", selected), DefaultStorageClass(), "worker-1", "/d")
	tests := []struct {
		name   string
		claim  *corev1.PersistentVolumeClaim
		extra  []runtime.Object
		want   []string
		events int
	}{
		{"selected node: provision", claim("data", selected), nil, []string{"create persistentvolumes pvc-uid-data"}, 2},
		{"no node yet: wait for the scheduler", claim("data", nil), nil, nil, 0},
		{"selected node gone: back to the scheduler", claim("data", map[string]string{AnnSelectedNode: "gone"}), nil, []string{"update persistentvolumeclaims data"}, 1},
		{"bound: nothing", bound, nil, nil, 0},
		{"another provisioner's class", otherClass, nil, nil, 0},
		{"immediate class: cannot pick a node", nowClass, []runtime.Object{immediate}, nil, 1},
		{"volume exists: the binder's turn", claim("again", selected), []runtime.Object{existing}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]runtime.Object{tt.claim, DefaultStorageClass(), other, node("worker-1", "w1.example")}, tt.extra...)
			c, env := newController(t, objs...)
			env.Client.ClearActions()
			if err := c.SyncClaim(context.Background(), "ns/"+tt.claim.Name); err != nil {
				t.Fatal(err)
			}
			if got := ctrltest.Describe(env.Writes()); !slices.Equal(got, tt.want) {
				t.Errorf("actions = %q, want %q", got, tt.want)
			}
			if got := len(env.Recorder.Events); got != tt.events {
				t.Errorf("%d events, want %d", got, tt.events)
			}
		})
	}
}

func TestNewVolume(t *testing.T) {
	pvc := claim("data", map[string]string{AnnSelectedNode: "worker-1"})
	pvc.ResourceVersion = "7"
	pv := NewVolume(pvc, DefaultStorageClass(), "w1.example", "/var/lib/skiff/storage")
	if pv.Name != "pvc-uid-data" || pv.Annotations[AnnProvisionedBy] != Provisioner {
		t.Errorf("name %q, annotations %v", pv.Name, pv.Annotations)
	}
	if hp := pv.Spec.HostPath; hp.Path != "/var/lib/skiff/storage/pvc-uid-data" || *hp.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("hostPath = %+v", hp)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "2Gi" {
		t.Errorf("capacity %s", q.String())
	}
	if ref := pv.Spec.ClaimRef; ref.Name != "data" || ref.Namespace != "ns" || ref.UID != "uid-data" {
		t.Errorf("claimRef = %+v", ref)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.StorageClassName != ClassName {
		t.Errorf("reclaim %s class %s", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.StorageClassName)
	}
	if got := VolumeNode(pv); got != "w1.example" {
		t.Errorf("node affinity names %q", got)
	}
}

func released(pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	pv = pv.DeepCopy()
	pv.UID = "pv-uid"
	pv.Status.Phase = corev1.VolumeReleased
	return pv
}

func TestSyncVolume(t *testing.T) {
	pv := released(NewVolume(claim("data", nil), DefaultStorageClass(), "w1.example", "/var/lib/skiff/storage"))
	retain := pv.DeepCopy()
	retain.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	boundPV := pv.DeepCopy()
	boundPV.Status.Phase = corev1.VolumeBound
	foreign := pv.DeepCopy()
	foreign.Annotations[AnnProvisionedBy] = "example.com/nfs"
	helper := func(phase corev1.PodPhase) *corev1.Pod {
		p := HelperPod(pv, "worker-1", "busybox")
		p.Status.Phase = phase
		return p
	}
	tests := []struct {
		name    string
		pv      *corev1.PersistentVolume
		helper  *corev1.Pod
		want    []string
		wantErr bool
	}{
		{"released: start the helper", pv, nil, []string{"create pods helper-pod-delete-pvc-uid-data"}, false},
		{"helper running: wait", pv, helper(corev1.PodRunning), nil, false},
		{"helper done: delete both", pv, helper(corev1.PodSucceeded), []string{"delete pods helper-pod-delete-pvc-uid-data", "delete persistentvolumes pvc-uid-data"}, false},
		{"helper failed: retry", pv, helper(corev1.PodFailed), []string{"delete pods helper-pod-delete-pvc-uid-data"}, true},
		{"retain policy: keep", retain, nil, nil, false},
		{"still bound: keep", boundPV, nil, nil, false},
		{"not ours: keep", foreign, nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.pv, node("worker-1", "w1.example")}
			if tt.helper != nil {
				objs = append(objs, tt.helper)
			}
			c, env := newController(t, objs...)
			env.Client.ClearActions()
			err := c.SyncVolume(context.Background(), tt.pv.Name)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			actions := env.Writes()
			if got := ctrltest.Describe(actions); !slices.Equal(got, tt.want) {
				t.Errorf("actions = %q, want %q", got, tt.want)
			}
			for _, a := range actions {
				if create, ok := a.(clienttesting.CreateAction); ok {
					pod := create.GetObject().(*corev1.Pod)
					// The node object's name, found from the hostname label the volume records.
					if pod.Spec.NodeName != "worker-1" || !slices.Equal(pod.Spec.Containers[0].Command, []string{"rm", "-rf", "/data/pvc-uid-data"}) ||
						pod.Spec.Volumes[0].HostPath.Path != "/var/lib/skiff/storage" {
						t.Errorf("helper pod = %+v", pod.Spec)
					}
				}
			}
		})
	}
}
