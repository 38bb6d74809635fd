package storageprotection

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

var (
	claims  = &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "persistentvolumeclaims", Namespaced: true}
	volumes = &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "persistentvolumes"}
	pods    = &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "pods", Namespaced: true}
	vacs    = &registry.Resource{GroupVersion: storagev1beta1.SchemeGroupVersion, Plural: "volumeattributesclasses"}
)

func vac(finalizers ...string) *storagev1beta1.VolumeAttributesClass {
	return &storagev1beta1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", Finalizers: finalizers}, DriverName: "d.example.com"}
}

func claim(finalizers ...string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", Finalizers: finalizers}}
}

func volume(finalizers ...string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", Finalizers: finalizers}}
}

func TestAdmit(t *testing.T) {
	tests := []struct {
		name        string
		verb        string
		resource    *registry.Resource
		subresource string
		obj         runtime.Object
		want        []string
	}{
		{"created claim is protected", "create", claims, "", claim(), []string{"kubernetes.io/pvc-protection"}},
		{"created volume is protected", "create", volumes, "", volume(), []string{"kubernetes.io/pv-protection"}},
		{"created volume attributes class is protected", "create", vacs, "", vac(), []string{"kubernetes.io/vac-protection"}},
		{"update leaves a volume attributes class alone", "update", vacs, "", vac(), nil},
		{"other finalizers stay, ours goes last", "create", claims, "", claim("example.com/keep"), []string{"example.com/keep", "kubernetes.io/pvc-protection"}},
		{"not added twice", "create", volumes, "", volume("kubernetes.io/pv-protection"), []string{"kubernetes.io/pv-protection"}},
		// The controllers remove the finalizer with an update: it must not come back.
		{"update leaves a claim alone", "update", claims, "", claim(), nil},
		{"update leaves a volume alone", "update", volumes, "", volume(), nil},
		{"status subresource left alone", "create", claims, "status", claim(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &admission.Attributes{Verb: tt.verb, Resource: tt.resource, Subresource: tt.subresource, Object: tt.obj}
			if err := (Plugin{}).Admit(context.Background(), a, nil); err != nil {
				t.Fatal(err)
			}
			if err := (Plugin{}).Validate(context.Background(), a, nil); err != nil {
				t.Fatal(err)
			}
			var got []string
			switch o := tt.obj.(type) {
			case *corev1.PersistentVolumeClaim:
				got = o.Finalizers
			case *corev1.PersistentVolume:
				got = o.Finalizers
			case *storagev1beta1.VolumeAttributesClass:
				got = o.Finalizers
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("finalizers %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAdmitLeavesOtherResources(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	a := &admission.Attributes{Verb: "create", Resource: pods, Object: pod}
	if err := (Plugin{}).Admit(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	if len(pod.Finalizers) != 0 {
		t.Errorf("pod got finalizers %q", pod.Finalizers)
	}
	// A delete carries no object.
	del := &admission.Attributes{Verb: "delete", Resource: claims, Name: "data", Namespace: "ns"}
	if err := (Plugin{}).Admit(context.Background(), del, nil); err != nil {
		t.Fatal(err)
	}
}
