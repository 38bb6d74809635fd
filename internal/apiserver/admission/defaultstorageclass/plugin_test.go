package defaultstorageclass

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
)

// classLookup serves a fixed list of storage classes.
type classLookup []storagev1.StorageClass

func (l classLookup) Get(_ context.Context, group, resource, _, name string) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
}

func (l classLookup) List(context.Context, string, string, string) (runtime.Object, error) {
	return &storagev1.StorageClassList{Items: l}, nil
}

func class(name string, isDefault string, created time.Time) storagev1.StorageClass {
	sc := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	if isDefault != "" {
		sc.Annotations = map[string]string{isDefault: "true"}
	}
	return sc
}

func TestDefaultStorageClassAdmission(t *testing.T) {
	const ann, beta = "storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	empty, fast := "", "fast"
	tests := []struct {
		name    string
		verb    string
		class   *string
		classes classLookup
		want    *string
	}{
		{"no class gets the default", "create", nil, classLookup{class("slow", "", t0), class("local-path", ann, t0)}, ptrTo("local-path")},
		{"beta annotation counts", "create", nil, classLookup{class("old", beta, t0)}, ptrTo("old")},
		{"newest default wins", "create", nil, classLookup{class("a", ann, t0), class("b", ann, t0.Add(time.Hour))}, ptrTo("b")},
		{"same age: first by name", "create", nil, classLookup{class("b", ann, t0), class("a", ann, t0)}, ptrTo("a")},
		{"no default leaves it unset", "create", nil, classLookup{class("slow", "", t0)}, nil},
		{"explicit empty class is kept", "create", &empty, classLookup{class("local-path", ann, t0)}, &empty},
		{"explicit class is kept", "create", &fast, classLookup{class("local-path", ann, t0)}, &fast},
		{"updates are not defaulted", "update", nil, classLookup{class("local-path", ann, t0)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
			pvc.Spec.StorageClassName = tt.class
			a := &admission.Attributes{Verb: tt.verb, Resource: &registry.Resource{Plural: "persistentvolumeclaims", Namespaced: true}, Namespace: "ns", Name: "c", Object: pvc}
			if err := (Plugin{}).Admit(context.Background(), a, tt.classes); err != nil {
				t.Fatal(err)
			}
			got := pvc.Spec.StorageClassName
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("storageClassName = %v, want %v", deref(got), deref(tt.want))
			}
		})
	}
}

func ptrTo(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
