package core

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedAccessModes = []corev1.PersistentVolumeAccessMode{
	corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod,
}

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path, requiredMsg string) field.ErrorList {
	if len(modes) == 0 {
		return field.ErrorList{field.Required(fldPath, requiredMsg)}
	}
	var errs field.ErrorList
	hasOncePod := false
	for _, m := range modes {
		errs = append(errs, validateEnum(m, fldPath, supportedAccessModes...)...)
		hasOncePod = hasOncePod || m == corev1.ReadWriteOncePod
	}
	if hasOncePod && len(modes) > 1 {
		errs = append(errs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validateVolumeMode(mode *corev1.PersistentVolumeMode, fldPath *field.Path) field.ErrorList {
	if mode == nil {
		return nil
	}
	return validateEnum(*mode, fldPath, corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)
}

// ValidatePersistentVolume checks access modes, capacity, the single volume source and policies.
func ValidatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	errs := validateObjectMeta(&pv.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	spec := &pv.Spec
	errs = append(errs, validateAccessModes(spec.AccessModes, specPath.Child("accessModes"), "")...)
	if len(spec.Capacity) == 0 {
		errs = append(errs, field.Required(specPath.Child("capacity"), ""))
	}
	for _, name := range sortedResourceNames(spec.Capacity) {
		if name != corev1.ResourceStorage {
			errs = append(errs, field.NotSupported(specPath.Child("capacity"), name, []string{string(corev1.ResourceStorage)}))
			continue
		}
		errs = append(errs, validatePositiveQuantity(spec.Capacity[name], specPath.Child("capacity").Key(string(name)))...)
	}
	errs = append(errs, validateOptionalEnum(spec.PersistentVolumeReclaimPolicy, specPath.Child("persistentVolumeReclaimPolicy"),
		corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain)...)
	errs = append(errs, validateVolumeMode(spec.VolumeMode, specPath.Child("volumeMode"))...)
	if spec.StorageClassName != "" {
		errs = append(errs, validateDNS1123Subdomain(spec.StorageClassName, specPath.Child("storageClassName"))...)
	}

	set := setSources(spec.PersistentVolumeSource)
	switch {
	case len(set) == 0:
		errs = append(errs, field.Required(specPath, "must specify a volume type"))
	case len(set) > 1:
		errs = append(errs, field.Forbidden(specPath.Child(set[1]), "may not specify more than 1 volume type"))
	default:
		src := &spec.PersistentVolumeSource
		switch {
		case src.HostPath != nil:
			errs = append(errs, validateHostPath(src.HostPath, specPath.Child("hostPath"))...)
			if spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle && path.Clean(src.HostPath.Path) == "/" {
				errs = append(errs, field.Forbidden(specPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
			}
		case src.Local != nil:
			if src.Local.Path == "" {
				errs = append(errs, field.Required(specPath.Child("local", "path"), ""))
			}
			if spec.NodeAffinity == nil {
				errs = append(errs, field.Required(specPath.Child("nodeAffinity"), "Local volume requires node affinity"))
			}
		case src.NFS != nil:
			if src.NFS.Server == "" {
				errs = append(errs, field.Required(specPath.Child("nfs", "server"), ""))
			}
			if src.NFS.Path == "" {
				errs = append(errs, field.Required(specPath.Child("nfs", "path"), ""))
			} else if !path.IsAbs(src.NFS.Path) {
				errs = append(errs, field.Invalid(specPath.Child("nfs", "path"), src.NFS.Path, "must be an absolute path"))
			}
		case src.CSI != nil:
			if src.CSI.Driver == "" {
				errs = append(errs, field.Required(specPath.Child("csi", "driver"), ""))
			}
			if src.CSI.VolumeHandle == "" {
				errs = append(errs, field.Required(specPath.Child("csi", "volumeHandle"), ""))
			}
		}
	}
	errs = append(errs, validateVolumeAttributesClassOfVolume(spec, specPath)...)
	if na := spec.NodeAffinity; na != nil {
		if na.Required == nil {
			errs = append(errs, field.Required(specPath.Child("nodeAffinity", "required"), "must specify required node constraints"))
		} else {
			errs = append(errs, ValidateNodeSelector(na.Required, specPath.Child("nodeAffinity", "required"))...)
		}
	}
	if ref := spec.ClaimRef; ref != nil {
		if ref.Name == "" {
			errs = append(errs, field.Required(specPath.Child("claimRef", "name"), ""))
		}
		if ref.Namespace == "" {
			errs = append(errs, field.Required(specPath.Child("claimRef", "namespace"), ""))
		}
	}
	return errs
}

// ValidatePersistentVolumeUpdate: the volume source, volume mode and node affinity never change.
func ValidatePersistentVolumeUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	errs := validateObjectMetaUpdate(&pv.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, ValidatePersistentVolume(pv)...)
	if !apiequality.Semantic.DeepEqual(pv.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(specPath.Child("persistentvolumesource"), "spec.persistentvolumesource is forbidden once set"))
	}
	errs = append(errs, validateImmutable(pv.Spec.VolumeMode, old.Spec.VolumeMode, specPath.Child("volumeMode"))...)
	if old.Spec.NodeAffinity != nil {
		errs = append(errs, validateImmutable(pv.Spec.NodeAffinity, old.Spec.NodeAffinity, specPath.Child("nodeAffinity"))...)
	}
	if old.Spec.VolumeAttributesClassName != nil && pv.Spec.VolumeAttributesClassName == nil {
		errs = append(errs, field.Forbidden(specPath.Child("volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return errs
}

// validateVolumeAttributesClassOfVolume: a volume names its VolumeAttributesClass by a class name,
// never an empty one, and only a CSI volume can have one (the class's parameters go to the driver's
// ControllerModifyVolume).
func validateVolumeAttributesClassOfVolume(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	name := spec.VolumeAttributesClassName
	if name == nil {
		return nil
	}
	var errs field.ErrorList
	if *name == "" {
		errs = append(errs, field.Required(fldPath.Child("volumeAttributesClassName"), "an empty string is disallowed"))
	} else {
		errs = append(errs, validateDNS1123Subdomain(*name, fldPath.Child("volumeAttributesClassName"))...)
	}
	if spec.CSI == nil {
		errs = append(errs, field.Required(fldPath.Child("csi"), "has to be specified when using volumeAttributesClassName"))
	}
	return errs
}

// ValidatePersistentVolumeStatusUpdate checks persistentvolumes/status.
func ValidatePersistentVolumeStatusUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	errs := validateObjectMetaUpdate(&pv.ObjectMeta, &old.ObjectMeta)
	if pv.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	errs = append(errs, validateOptionalEnum(pv.Status.Phase, statusPath.Child("phase"),
		corev1.VolumeAvailable, corev1.VolumeBound, corev1.VolumeFailed, corev1.VolumePending, corev1.VolumeReleased)...)
	return errs
}

// ValidatePersistentVolumeClaim checks access modes, the storage request and selectors.
func ValidatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateObjectMeta(&pvc.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(errs, ValidatePersistentVolumeClaimSpec(&pvc.Spec, specPath)...)
}

// ValidatePersistentVolumeClaimSpec checks a claim spec (also used by StatefulSet claim templates).
func ValidatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	errs := validateAccessModes(spec.AccessModes, fldPath.Child("accessModes"), "at least 1 access mode is required")
	if spec.Selector != nil {
		errs = append(errs, validateLabelSelector(spec.Selector, fldPath.Child("selector"))...)
	}
	storage, ok := spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		errs = append(errs, field.Required(fldPath.Child("resources").Key(string(corev1.ResourceStorage)), ""))
	} else {
		p := fldPath.Child("resources").Key(string(corev1.ResourceStorage))
		errs = append(errs, validateResourceQuantityValue(string(corev1.ResourceStorage), storage, p)...)
		errs = append(errs, validatePositiveQuantity(storage, p)...)
	}
	errs = append(errs, validateVolumeMode(spec.VolumeMode, fldPath.Child("volumeMode"))...)
	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		errs = append(errs, validateDNS1123Subdomain(*spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if spec.VolumeAttributesClassName != nil && *spec.VolumeAttributesClassName != "" {
		errs = append(errs, validateDNS1123Subdomain(*spec.VolumeAttributesClassName, fldPath.Child("volumeAttributesClassName"))...)
	}
	if spec.DataSource != nil {
		if spec.DataSource.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("dataSource", "name"), ""))
		}
		if spec.DataSource.Kind == "" {
			errs = append(errs, field.Required(fldPath.Child("dataSource", "kind"), ""))
		}
	}
	return errs
}

// ValidatePersistentVolumeClaimUpdate: the spec is immutable except the storage request of a bound
// claim (which may not shrink) and its volumeAttributesClassName (which, once set, stays set:
// the class a volume was modified to cannot be taken back to "none").
func ValidatePersistentVolumeClaimUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateObjectMetaUpdate(&pvc.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, ValidatePersistentVolumeClaim(pvc)...)

	newSpec, oldSpec := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	// A claim being bound gets its volume name once.
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	if pvc.Status.Phase == corev1.ClaimBound && newSpec.VolumeAttributesClassName != nil {
		newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
	}
	newSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	oldSize := old.Spec.Resources.Requests[corev1.ResourceStorage]
	if pvc.Status.Phase == corev1.ClaimBound && newSpec.Resources.Requests != nil {
		if oldSpec.Resources.Requests == nil {
			oldSpec.Resources.Requests = corev1.ResourceList{}
		}
		newSpec.Resources.Requests[corev1.ResourceStorage] = oldSize
		oldSpec.Resources.Requests[corev1.ResourceStorage] = oldSize
	}
	if !apiequality.Semantic.DeepEqual(newSpec, oldSpec) {
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n%v", claimSpecDiff(*oldSpec, *newSpec))))
	}
	if newSize.Cmp(oldSize) < 0 {
		capacity, hasCapacity := pvc.Status.Capacity[corev1.ResourceStorage]
		if !hasCapacity || newSize.Cmp(capacity) <= 0 {
			errs = append(errs, field.Forbidden(specPath.Child("resources", "requests", "storage"), "field can not be less than status.capacity"))
		}
	}
	if old.Spec.VolumeAttributesClassName != nil {
		switch name := pvc.Spec.VolumeAttributesClassName; {
		case name == nil:
			errs = append(errs, field.Forbidden(specPath.Child("volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
		case *name == "":
			errs = append(errs, field.Forbidden(specPath.Child("volumeAttributesClassName"), "update from non-nil value to an empty string is forbidden"))
		}
	}
	return errs
}

func claimSpecDiff(old, updated corev1.PersistentVolumeClaimSpec) (diff string) {
	defer func() {
		if recover() != nil {
			diff = ""
		}
	}()
	return cmpDiff(old, updated)
}

// ValidatePersistentVolumeClaimStatusUpdate checks persistentvolumeclaims/status.
func ValidatePersistentVolumeClaimStatusUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validateObjectMetaUpdate(&pvc.ObjectMeta, &old.ObjectMeta)
	if pvc.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	if len(pvc.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(specPath.Child("accessModes"), ""))
	}
	errs = append(errs, validateOptionalEnum(pvc.Status.Phase, statusPath.Child("phase"), corev1.ClaimBound, corev1.ClaimLost, corev1.ClaimPending)...)
	for _, name := range sortedResourceNames(pvc.Status.Capacity) {
		errs = append(errs, validateResourceQuantityValue(string(name), pvc.Status.Capacity[name], statusPath.Child("capacity").Key(string(name)))...)
	}
	modes := sets.New(pvc.Status.AccessModes...)
	for _, m := range sets.List(modes) {
		errs = append(errs, validateEnum(m, statusPath.Child("accessModes"), supportedAccessModes...)...)
	}
	return errs
}
