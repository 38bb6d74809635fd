package storageprotection

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// Name is Kubernetes' name of the plugin.
const Name = "StorageObjectInUseProtection"

var (
	claimsGR  = schema.GroupResource{Resource: "persistentvolumeclaims"}
	volumesGR = schema.GroupResource{Resource: "persistentvolumes"}
	vacsGR    = schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattributesclasses"}
)

// Finalizer is the protection finalizer a new object of gr gets, and false for the resources the
// plugin leaves alone.
func Finalizer(gr schema.GroupResource) (string, bool) {
	switch gr {
	case claimsGR:
		return volumeutil.PVCProtectionFinalizer, true
	case volumesGR:
		return volumeutil.PVProtectionFinalizer, true
	case vacsGR:
		return volumeutil.VACProtectionFinalizer, true
	}
	return "", false
}

// WithFinalizer returns finalizers with f appended unless it is already there, and whether it added it.
func WithFinalizer(finalizers []string, f string) ([]string, bool) {
	if slices.Contains(finalizers, f) {
		return finalizers, false
	}
	return append(finalizers, f), true
}

// Plugin is the StorageObjectInUseProtection admission plugin.
type Plugin struct{}

var _ admission.Plugin = Plugin{}

// Name is Kubernetes' plugin name.
func (Plugin) Name() string { return Name }

// Admit adds the protection finalizer to a created claim, volume or volume attributes class.
func (Plugin) Admit(_ context.Context, a *admission.Attributes, _ admission.Lookup) error {
	if a.Verb != "create" || a.Subresource != "" || a.Object == nil {
		return nil
	}
	f, ok := Finalizer(a.Resource.GroupResource())
	if !ok {
		return nil
	}
	obj, err := meta.Accessor(a.Object)
	if err != nil {
		// Not an object with metadata: nothing to protect, and the registry refuses it anyway.
		return nil
	}
	if next, added := WithFinalizer(obj.GetFinalizers(), f); added {
		obj.SetFinalizers(next)
	}
	return nil
}

// Validate refuses nothing.
func (Plugin) Validate(context.Context, *admission.Attributes, admission.Lookup) error {
	return nil
}
