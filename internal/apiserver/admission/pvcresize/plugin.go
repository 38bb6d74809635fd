package pvcresize

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Name is Kubernetes' name of the plugin.
const Name = "PersistentVolumeClaimResize"

// Upstream's refusals.
var (
	//lint:ignore ST1005 Kubernetes' wording, which clients match.
	ErrNotBound    = errors.New("Only bound persistent volume claims can be expanded")
	ErrNotResizing = errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")
)

var claimsGR = schema.GroupResource{Resource: "persistentvolumeclaims"}

// Check judges an update of a claim from old to pvc; class is the claim's StorageClass (nil when it
// names none or it does not exist). It is pure.
func Check(pvc, old *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if old.Status.Phase != corev1.ClaimBound {
		return ErrNotBound
	}
	name, oldName := className(pvc), className(old)
	if name == "" || name != oldName || class == nil || class.Name != name ||
		class.AllowVolumeExpansion == nil || !*class.AllowVolumeExpansion {
		return ErrNotResizing
	}
	return nil
}

func className(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// Plugin is the PersistentVolumeClaimResize admission plugin.
type Plugin struct{}

var _ admission.Plugin = Plugin{}

// Name is Kubernetes' plugin name.
func (Plugin) Name() string { return Name }

// Admit changes nothing.
func (Plugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error {
	return nil
}

// Validate refuses a claim's growth that its class does not allow.
func (Plugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if a.Verb != "update" || a.Subresource != "" || a.Resource.GroupResource() != claimsGR {
		return nil
	}
	pvc, ok1 := a.Object.(*corev1.PersistentVolumeClaim)
	old, ok2 := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok1 || !ok2 {
		return nil
	}
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	var class *storagev1.StorageClass
	if name := className(pvc); name != "" {
		obj, err := lookup.Get(ctx, storagev1.GroupName, "storageclasses", "", name)
		switch {
		case err == nil:
			class, _ = obj.(*storagev1.StorageClass)
		case !apierrors.IsNotFound(err):
			return apierrors.NewInternalError(fmt.Errorf("get storage class %s: %w", name, err))
		}
	}
	if err := Check(pvc, old, class); err != nil {
		return apierrors.NewForbidden(claimsGR, a.Name, err)
	}
	return nil
}
