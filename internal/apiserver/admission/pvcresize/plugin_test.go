package pvcresize

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

func claim(class, size string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns"},
		Spec: corev1.PersistentVolumeClaimSpec{
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: phase},
	}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	return pvc
}

func class(name string, expand *bool) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "hostpath.csi.k8s.io", AllowVolumeExpansion: expand}
}

func TestCheck(t *testing.T) {
	bound, pending := corev1.ClaimBound, corev1.ClaimPending
	tests := []struct {
		name     string
		old, pvc *corev1.PersistentVolumeClaim
		class    *storagev1.StorageClass
		want     error
	}{
		{"growth allowed by the class", claim("sc", "1Gi", bound), claim("sc", "2Gi", bound), class("sc", ptr.To(true)), nil},
		{"class does not allow it", claim("sc", "1Gi", bound), claim("sc", "2Gi", bound), class("sc", ptr.To(false)), ErrNotResizing},
		{"class says nothing", claim("sc", "1Gi", bound), claim("sc", "2Gi", bound), class("sc", nil), ErrNotResizing},
		{"class missing", claim("sc", "1Gi", bound), claim("sc", "2Gi", bound), nil, ErrNotResizing},
		{"no class", claim("", "1Gi", bound), claim("", "2Gi", bound), nil, ErrNotResizing},
		{"claim not bound", claim("sc", "1Gi", pending), claim("sc", "2Gi", pending), class("sc", ptr.To(true)), ErrNotBound},
		{"same size: not a resize", claim("sc", "1Gi", pending), claim("sc", "1Gi", pending), nil, nil},
		{"shrinking is the registry's to judge", claim("sc", "2Gi", bound), claim("sc", "1Gi", bound), nil, nil},
	}
	for _, tt := range tests {
		if got := Check(tt.pvc, tt.old, tt.class); !errors.Is(got, tt.want) {
			t.Errorf("%s: Check = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// lookup serves one StorageClass.
type lookup struct{ class *storagev1.StorageClass }

func (l lookup) Get(_ context.Context, group, resource, _, name string) (runtime.Object, error) {
	if group == storagev1.GroupName && resource == "storageclasses" && l.class != nil && name == l.class.Name {
		return l.class, nil
	}
	return nil, apierrors.NewNotFound(storagev1.Resource(resource), name)
}

func (lookup) List(context.Context, string, string, string) (runtime.Object, error) { return nil, nil }

func TestValidate(t *testing.T) {
	claims := &registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Plural: "persistentvolumeclaims", Namespaced: true}
	old, grown := claim("sc", "1Gi", corev1.ClaimBound), claim("sc", "2Gi", corev1.ClaimBound)
	a := &admission.Attributes{Verb: "update", Resource: claims, Name: "data", Namespace: "ns", Object: grown, OldObject: old}
	err := Plugin{}.Validate(context.Background(), a, lookup{class("sc", ptr.To(false))})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must support resize") {
		t.Fatalf("growth without allowVolumeExpansion: %v", err)
	}
	if err := (Plugin{}).Validate(context.Background(), a, lookup{class("sc", ptr.To(true))}); err != nil {
		t.Fatalf("allowed growth refused: %v", err)
	}
	status := *a
	status.Subresource = "status"
	if err := (Plugin{}).Validate(context.Background(), &status, lookup{}); err != nil {
		t.Fatalf("status update judged: %v", err)
	}
}
