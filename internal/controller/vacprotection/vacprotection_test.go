package vacprotection

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

const finalizer = volumeutil.VACProtectionFinalizer

func class(deleting bool, finalizers ...string) *storagev1beta1.VolumeAttributesClass {
	vac := &storagev1beta1.VolumeAttributesClass{
		ObjectMeta: metav1.ObjectMeta{Name: "fast", UID: "uid-fast", ResourceVersion: "3", Finalizers: finalizers},
		DriverName: "hostpath.csi.k8s.io", Parameters: map[string]string{"iops": "3000"},
	}
	if deleting {
		vac.DeletionTimestamp = ptr.To(metav1.NewTime(ctrltest.Epoch()))
	}
	return vac
}

func claim(name string, set func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	set(pvc)
	return pvc
}

func volume(vac string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec:       corev1.PersistentVolumeSpec{VolumeAttributesClassName: ptr.To(vac)},
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name  string
		vac   *storagev1beta1.VolumeAttributesClass
		inUse bool
		want  Action
	}{
		{"live class without finalizer gets it", class(false, "example.com/x"), false, AddFinalizer},
		{"live class in use without finalizer gets it", class(false), true, AddFinalizer},
		{"live class with finalizer", class(false, finalizer), false, Nothing},
		{"deleting class in use is kept", class(true, finalizer), true, Nothing},
		{"deleting class unused goes", class(true, finalizer), false, RemoveFinalizer},
		{"deleting class without our finalizer is not ours", class(true, "example.com/x"), false, Nothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.vac, tt.inUse); got != tt.want {
				t.Errorf("Decide = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUses(t *testing.T) {
	tests := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want []string
	}{
		{"none", claim("a", func(*corev1.PersistentVolumeClaim) {}), nil},
		{"asked for", claim("a", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To("fast") }), []string{"fast"}},
		{"empty name is none", claim("a", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To("") }), nil},
		{"current and asked for", claim("a", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeAttributesClassName = ptr.To("fast")
			c.Status.CurrentVolumeAttributesClassName = ptr.To("slow")
		}), []string{"fast", "slow"}},
		{"target of a modification", claim("a", func(c *corev1.PersistentVolumeClaim) {
			c.Status.ModifyVolumeStatus = &corev1.ModifyVolumeStatus{TargetVolumeAttributesClassName: "gold", Status: corev1.PersistentVolumeClaimModifyVolumeInProgress}
		}), []string{"gold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClaimUses(tt.pvc); !slices.Equal(got, tt.want) {
				t.Errorf("ClaimUses = %q, want %q", got, tt.want)
			}
		})
	}
	if got := VolumeUses(volume("fast")); !slices.Equal(got, []string{"fast"}) {
		t.Errorf("VolumeUses = %q", got)
	}
	if got := VolumeUses(&corev1.PersistentVolume{}); got != nil {
		t.Errorf("VolumeUses of a volume without a class = %q", got)
	}
}

func TestSync(t *testing.T) {
	asks := claim("data", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To("fast") })
	other := claim("other", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To("slow") })
	tests := []struct {
		name    string
		vac     *storagev1beta1.VolumeAttributesClass
		claims  []*corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		want    []string // the class's finalizers after the update; nil: no write
	}{
		{name: "adds the finalizer to a class made before admission set it", vac: class(false, "example.com/x"), want: []string{"example.com/x", finalizer}},
		{name: "removes it from an unused class being deleted", vac: class(true, finalizer, "example.com/x"), claims: []*corev1.PersistentVolumeClaim{other}, want: []string{"example.com/x"}},
		{name: "keeps a class a claim asks for", vac: class(true, finalizer), claims: []*corev1.PersistentVolumeClaim{other, asks}},
		{name: "keeps a class a volume has (its claim gone, the volume retained)", vac: class(true, finalizer), volumes: []*corev1.PersistentVolume{volume("fast")}},
		{name: "nothing for a protected live class", vac: class(false, finalizer), claims: []*corev1.PersistentVolumeClaim{asks}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.vac}
			for _, c := range tt.claims {
				objs = append(objs, c)
			}
			for _, v := range tt.volumes {
				objs = append(objs, v)
			}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Storage().V1beta1().VolumeAttributesClasses().Informer(), tt.vac)
			for _, pvc := range tt.claims {
				ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumeClaims().Informer(), pvc)
			}
			for _, pv := range tt.volumes {
				ctrltest.Seed(t, env.Factory.Core().V1().PersistentVolumes().Informer(), pv)
			}
			if err := c.Sync(context.Background(), "fast"); err != nil {
				t.Fatal(err)
			}
			ctrltest.FinalizerUpdate(t, env.Writes(), "update volumeattributesclasses fast", tt.want)
		})
	}
}
