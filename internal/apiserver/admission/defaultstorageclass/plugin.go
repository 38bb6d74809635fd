package defaultstorageclass

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Name is Kubernetes' name of the plugin.
const Name = "DefaultStorageClass"

// Plugin gives a claim created without spec.storageClassName the cluster's default StorageClass.
type Plugin struct{}

func (Plugin) Name() string { return Name }

func (Plugin) Admit(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if a.Verb != "create" || a.Subresource != "" || a.Resource.GroupResource() != (schema.GroupResource{Resource: "persistentvolumeclaims"}) {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.StorageClassName != nil {
		return nil
	}
	list, err := lookup.List(ctx, "storage.k8s.io", "storageclasses", "")
	if apierrors.IsNotFound(err) {
		// StorageClasses are not served (a server built without storage.k8s.io): no default.
		return nil
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("list storage classes: %w", err))
	}
	classes, ok := list.(*storagev1.StorageClassList)
	if !ok {
		return nil
	}
	if def := DefaultClass(classes.Items); def != nil {
		name := def.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}

func (Plugin) Validate(context.Context, *admission.Attributes, admission.Lookup) error { return nil }

// DefaultClass picks the default among classes: those annotated
// storageclass.kubernetes.io/is-default-class (or the beta key) "true", newest first, then by name.
func DefaultClass(classes []storagev1.StorageClass) *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for i := range classes {
		sc := &classes[i]
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" && sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] != "true" {
			continue
		}
		switch {
		case best == nil, sc.CreationTimestamp.After(best.CreationTimestamp.Time):
			best = sc
		case sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name:
			best = sc
		}
	}
	return best
}
