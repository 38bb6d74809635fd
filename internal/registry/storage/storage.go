package storage

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Limits Kubernetes enforces on storage objects.
const (
	maxProvisionerParameterSize   = 256 * (1 << 10) // bytes of keys and values together
	maxProvisionerParameterLen    = 512             // entries
	maxAttachedVolumeMetadataSize = 256 * (1 << 10)
	maxVolumeErrorMessageSize     = 1024
	csiNodeIDMaxLength            = 192
	csiDriverNameMaxLength        = 63
	minTokenExpirationSeconds     = 600
	minAllocatableUpdatePeriod    = 10
)

var (
	supportedReclaimPolicies = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain)}
	supportedBindingModes    = []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}
	supportedFSGroupPolicies = []string{string(storagev1.FileFSGroupPolicy), string(storagev1.NoneFSGroupPolicy), string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)}
	supportedLifecycleModes  = []string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}
)

// Resources returns the storage.k8s.io/v1 resources with the names and scopes Kubernetes serves.
func Resources() []*registry.Resource {
	gv := storagev1.SchemeGroupVersion
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "StorageClass", ListKind: "StorageClassList",
			Plural: "storageclasses", Singular: "storageclass", ShortNames: []string{"sc"},
			New:     func() runtime.Object { return &storagev1.StorageClass{} },
			NewList: func() runtime.Object { return &storagev1.StorageClassList{} },
			Strategy: &vu.Strategy[*storagev1.StorageClass]{
				ValidateObject:      ValidateStorageClass,
				ValidateChange:      ValidateStorageClassChange,
				UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "CSIDriver", ListKind: "CSIDriverList",
			Plural: "csidrivers", Singular: "csidriver",
			New:     func() runtime.Object { return &storagev1.CSIDriver{} },
			NewList: func() runtime.Object { return &storagev1.CSIDriverList{} },
			Strategy: &vu.Strategy[*storagev1.CSIDriver]{
				// The spec is the driver's contract with the kubelet; Kubernetes counts its changes.
				SpecEqual: func(d, old *storagev1.CSIDriver) bool { return apiequality.Semantic.DeepEqual(d.Spec, old.Spec) },
				ValidateObject: func(d *storagev1.CSIDriver) field.ErrorList {
					return ValidateCSIDriverSpec(&d.Spec, field.NewPath("spec"))
				},
				ValidateChange:      ValidateCSIDriverChange,
				UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "CSINode", ListKind: "CSINodeList",
			Plural: "csinodes", Singular: "csinode",
			New:     func() runtime.Object { return &storagev1.CSINode{} },
			NewList: func() runtime.Object { return &storagev1.CSINodeList{} },
			Strategy: &vu.Strategy[*storagev1.CSINode]{
				ValidateObject: func(n *storagev1.CSINode) field.ErrorList {
					return validateCSINodeDrivers(n.Spec.Drivers, field.NewPath("spec", "drivers"))
				},
				ValidateChange:      ValidateCSINodeChange,
				UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "CSIStorageCapacity", ListKind: "CSIStorageCapacityList",
			Plural: "csistoragecapacities", Singular: "csistoragecapacity", Namespaced: true,
			New:     func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
			NewList: func() runtime.Object { return &storagev1.CSIStorageCapacityList{} },
			Strategy: &vu.Strategy[*storagev1.CSIStorageCapacity]{
				Namespaced:          true,
				ValidateObject:      ValidateCSIStorageCapacity,
				ValidateChange:      ValidateCSIStorageCapacityChange,
				UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "VolumeAttachment", ListKind: "VolumeAttachmentList",
			Plural: "volumeattachments", Singular: "volumeattachment",
			New:     func() runtime.Object { return &storagev1.VolumeAttachment{} },
			NewList: func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
			Strategy: &vu.Strategy[*storagev1.VolumeAttachment]{
				APIVersion:          gv.String(),
				ClearStatus:         func(va *storagev1.VolumeAttachment) { va.Status = storagev1.VolumeAttachmentStatus{} },
				KeepStatus:          func(va, old *storagev1.VolumeAttachment) { va.Status = old.Status },
				ValidateObject:      ValidateVolumeAttachment,
				ValidateChange:      validateVolumeAttachmentSpecUnchanged,
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*storagev1.VolumeAttachment]{
				APIVersion: gv.String(),
				Metadata:   vu.StatusResetsMetadata,
				KeepSpec:   func(va, old *storagev1.VolumeAttachment) { va.Spec = old.Spec },
				ValidateStatus: func(va, _ *storagev1.VolumeAttachment) field.ErrorList {
					return validateVolumeAttachmentStatus(&va.Status, field.NewPath("status"))
				},
			},
		},
		volumeAttributesClasses(),
	}
}

// volumeAttributesClasses serves VolumeAttributesClass at storage.k8s.io/v1beta1, as a v1.33
// cluster with the VolumeAttributesClass feature gate on does (beta there, off by default; GA in
// v1.34): the mutable attributes a CSI driver's ControllerModifyVolume applies to a claim's volume.
func volumeAttributesClasses() *registry.Resource {
	return &registry.Resource{
		GroupVersion: storagev1beta1.SchemeGroupVersion, Kind: "VolumeAttributesClass", ListKind: "VolumeAttributesClassList",
		Plural: "volumeattributesclasses", Singular: "volumeattributesclass", ShortNames: []string{"vac"},
		New:     func() runtime.Object { return &storagev1beta1.VolumeAttributesClass{} },
		NewList: func() runtime.Object { return &storagev1beta1.VolumeAttributesClassList{} },
		Strategy: &vu.Strategy[*storagev1beta1.VolumeAttributesClass]{
			ValidateObject:      ValidateVolumeAttributesClass,
			ValidateChange:      ValidateVolumeAttributesClassChange,
			UnconditionalUpdate: true,
		},
	}
}

// ValidateVolumeAttributesClass checks the driver's name and the parameters, which may not be
// empty: a class is the attributes it sets.
func ValidateVolumeAttributesClass(vac *storagev1beta1.VolumeAttributesClass) field.ErrorList {
	errs := validateProvisioner(vac.DriverName, field.NewPath("driverName"))
	if len(vac.Parameters) == 0 {
		errs = append(errs, field.Required(field.NewPath("parameters"), "must contain at least one key/value pair"))
	}
	return append(errs, validateParameters(vac.Parameters, field.NewPath("parameters"))...)
}

// ValidateVolumeAttributesClassChange forbids changing the driver or the parameters: volumes were
// modified to them.
func ValidateVolumeAttributesClassChange(vac, old *storagev1beta1.VolumeAttributesClass) field.ErrorList {
	var errs field.ErrorList
	if vac.DriverName != old.DriverName {
		errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
	}
	if !reflect.DeepEqual(vac.Parameters, old.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	return errs
}

// ValidateStorageClass checks the provisioner, parameters, reclaim policy, binding mode and allowed
// topologies.
func ValidateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	errs := validateProvisioner(sc.Provisioner, field.NewPath("provisioner"))
	errs = append(errs, validateParameters(sc.Parameters, field.NewPath("parameters"))...)
	if p := sc.ReclaimPolicy; p != nil && *p != "" && !sets.New(supportedReclaimPolicies...).Has(string(*p)) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *p, supportedReclaimPolicies))
	}
	switch m := sc.VolumeBindingMode; {
	case m == nil:
		errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
	case !sets.New(supportedBindingModes...).Has(string(*m)):
		errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), *m, supportedBindingModes))
	}
	return append(errs, validateAllowedTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
}

// ValidateStorageClassChange forbids changing what volumes were provisioned with: the provisioner,
// its parameters, the reclaim policy and the binding mode.
func ValidateStorageClassChange(sc, old *storagev1.StorageClass) field.ErrorList {
	var errs field.ErrorList
	if !reflect.DeepEqual(sc.Parameters, old.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if sc.Provisioner != old.Provisioner {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if !apiequality.Semantic.DeepEqual(sc.ReclaimPolicy, old.ReclaimPolicy) {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	return append(errs, vu.Immutable(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}

// validateProvisioner requires a qualified name (compared in lower case, as Kubernetes does).
func validateProvisioner(provisioner string, fldPath *field.Path) field.ErrorList {
	if provisioner == "" {
		return field.ErrorList{field.Required(fldPath, provisioner)}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(strings.ToLower(provisioner)) {
		errs = append(errs, field.Invalid(fldPath, provisioner, msg))
	}
	return errs
}

// validateParameters bounds the provisioner parameters: at most 512 entries, 256 KiB in all, no
// empty key.
func validateParameters(params map[string]string, fldPath *field.Path) field.ErrorList {
	if len(params) > maxProvisionerParameterLen {
		return field.ErrorList{field.TooLong(fldPath, "", maxProvisionerParameterLen)}
	}
	var errs field.ErrorList
	var size int64
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(fldPath, k, "field can not be empty."))
		}
		size += int64(len(k)) + int64(len(v))
	}
	if size > maxProvisionerParameterSize {
		errs = append(errs, field.TooLong(fldPath, "", maxProvisionerParameterSize))
	}
	return errs
}

// validateAllowedTopologies checks each term's label requirements and rejects repeated terms.
func validateAllowedTopologies(terms []corev1.TopologySelectorTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make([]map[string]sets.Set[string], 0, len(terms))
	for i, term := range terms {
		idxPath := fldPath.Index(i)
		exprs, termErrs := validateTopologySelectorTerm(term, idxPath)
		errs = append(errs, termErrs...)
		for _, prev := range seen {
			if reflect.DeepEqual(prev, exprs) {
				errs = append(errs, field.Duplicate(idxPath.Child("matchLabelExpressions"), ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}

// validateTopologySelectorTerm checks a term's keys and values and returns its requirements as a map
// (key to values) for the duplicate check.
func validateTopologySelectorTerm(term corev1.TopologySelectorTerm, fldPath *field.Path) (map[string]sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	exprs := map[string]sets.Set[string]{}
	for i, req := range term.MatchLabelExpressions {
		reqPath := fldPath.Child("matchLabelExpressions").Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(req.Key, reqPath.Child("key"))...)
		if len(req.Values) == 0 {
			errs = append(errs, field.Required(reqPath.Child("values"), "must specify as least one value"))
		}
		for j, v := range req.Values {
			for _, msg := range validation.IsValidLabelValue(v) {
				errs = append(errs, field.Invalid(reqPath.Child("values").Index(j), v, msg))
			}
		}
		if _, dup := exprs[req.Key]; dup {
			errs = append(errs, field.Duplicate(reqPath.Child("key"), req.Key))
		}
		exprs[req.Key] = sets.New(req.Values...)
	}
	return exprs, errs
}

// validateCSIDriverName is Kubernetes' rule for a CSI driver's name wherever it is referenced: at most
// 63 characters and a DNS subdomain in lower case.
func validateCSIDriverName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath, ""))
	}
	if len(name) > csiDriverNameMaxLength {
		errs = append(errs, field.TooLong(fldPath, name, csiDriverNameMaxLength))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

// ValidateCSIDriverSpec checks the driver's capabilities; the booleans are required (defaulting
// sets them, so only a client that clears them explicitly meets this).
func ValidateCSIDriverSpec(spec *storagev1.CSIDriverSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Kubernetes reports attachRequired as "attachedRequired"; kubectl users see that path.
	for _, req := range []struct {
		v    *bool
		path string
	}{{spec.AttachRequired, "attachedRequired"}, {spec.PodInfoOnMount, "podInfoOnMount"}, {spec.StorageCapacity, "storageCapacity"}, {spec.SELinuxMount, "seLinuxMount"}} {
		if req.v == nil {
			errs = append(errs, field.Required(fldPath.Child(req.path), ""))
		}
	}
	if p := spec.FSGroupPolicy; p != nil && !sets.New(supportedFSGroupPolicies...).Has(string(*p)) {
		errs = append(errs, field.NotSupported(fldPath.Child("fsGroupPolicy"), *p, supportedFSGroupPolicies))
	}
	audiences := sets.New[string]()
	for i, tr := range spec.TokenRequests {
		p := fldPath.Child("tokenRequests").Index(i)
		if audiences.Has(tr.Audience) {
			errs = append(errs, field.Duplicate(p.Child("audience"), tr.Audience))
			continue
		}
		audiences.Insert(tr.Audience)
		if tr.ExpirationSeconds == nil {
			continue
		}
		if *tr.ExpirationSeconds < minTokenExpirationSeconds {
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *tr.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
		}
		if *tr.ExpirationSeconds > 1<<32 {
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *tr.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	for _, m := range spec.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(fldPath.Child("volumeLifecycleModes"), m, supportedLifecycleModes))
		}
	}
	if p := spec.NodeAllocatableUpdatePeriodSeconds; p != nil && *p < minAllocatableUpdatePeriod {
		errs = append(errs, field.Invalid(fldPath.Child("nodeAllocatableUpdatePeriodSeconds"), *p, "must be greater than or equal to 10 seconds"))
	}
	return errs
}

// ValidateCSIDriverChange keeps attachRequired and the lifecycle modes: volumes in use depend on them.
func ValidateCSIDriverChange(d, old *storagev1.CSIDriver) field.ErrorList {
	errs := vu.Immutable(d.Spec.AttachRequired, old.Spec.AttachRequired, field.NewPath("spec", "attachedRequired"))
	return append(errs, vu.Immutable(d.Spec.VolumeLifecycleModes, old.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
}

// validateCSINodeDrivers checks each registered driver: its name, node ID, volume limit and
// topology keys, and that no driver is listed twice.
func validateCSINodeDrivers(drivers []storagev1.CSINodeDriver, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, d := range drivers {
		p := fldPath.Index(i)
		errs = append(errs, validateCSIDriverName(d.Name, p.Child("name"))...)
		if d.NodeID == "" {
			errs = append(errs, field.Required(p.Child("nodeID"), d.NodeID))
		}
		if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(p.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			errs = append(errs, vu.NonNegative(*d.Allocatable.Count, p.Child("allocatable", "count"))...)
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		keys := sets.New[string]()
		for _, key := range d.TopologyKeys {
			if key == "" {
				errs = append(errs, field.Required(p, key))
			}
			if keys.Has(key) {
				errs = append(errs, field.Duplicate(p, key))
			}
			keys.Insert(key)
			errs = append(errs, vu.QualifiedName(key, p)...)
		}
	}
	return errs
}

// ValidateCSINodeChange keeps each already registered driver as it is; drivers may be added or
// removed.
func ValidateCSINodeChange(n, old *storagev1.CSINode) field.ErrorList {
	var errs field.ErrorList
	for _, o := range old.Spec.Drivers {
		for _, d := range n.Spec.Drivers {
			if o.Name == d.Name {
				errs = append(errs, vu.Immutable(d, o, field.NewPath("spec", "drivers"))...)
			}
		}
	}
	return errs
}

// ValidateCSIStorageCapacity checks the topology selector, the class name and a non-negative capacity.
func ValidateCSIStorageCapacity(c *storagev1.CSIStorageCapacity) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(c.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))
	for _, msg := range apivalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), "must be greater than or equal to 0"))
	}
	return errs
}

// ValidateCSIStorageCapacityChange keeps the inputs of the driver's GetCapacity call: the topology
// and the class.
func ValidateCSIStorageCapacityChange(c, old *storagev1.CSIStorageCapacity) field.ErrorList {
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(c.NodeTopology, old.NodeTopology) {
		errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, "field is immutable"))
	}
	if c.StorageClassName != old.StorageClassName {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, "field is immutable"))
	}
	return errs
}

// ValidateVolumeAttachment checks the attacher (a CSI driver name), that exactly one source is
// given, the node name and the status.
func ValidateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if va.Spec.Attacher == "" {
		errs = append(errs, field.Required(specPath.Child("attacher"), va.Spec.Attacher))
	} else {
		errs = append(errs, validateCSIDriverName(va.Spec.Attacher, specPath.Child("attacher"))...)
	}
	src, srcPath := va.Spec.Source, specPath.Child("source")
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		errs = append(errs, field.Required(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil:
		if *src.PersistentVolumeName == "" {
			errs = append(errs, field.Required(srcPath.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
		}
		for _, msg := range apivalidation.NameIsDNSSubdomain(*src.PersistentVolumeName, false) {
			if *src.PersistentVolumeName != "" {
				errs = append(errs, field.Invalid(srcPath.Child("persistentVolumeName"), *src.PersistentVolumeName, msg))
			}
		}
	case src.InlineVolumeSpec.CSI == nil:
		// Inline specs come from CSI migration, which always translates to a CSI source.
		errs = append(errs, field.Required(srcPath.Child("inlineVolumeSpec", "csi"), ""))
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		errs = append(errs, field.Invalid(specPath.Child("nodeName"), va.Spec.NodeName, msg))
	}
	return append(errs, validateVolumeAttachmentStatus(&va.Status, field.NewPath("status"))...)
}

// validateVolumeAttachmentSpecUnchanged: the spec is read-only once created (Kubernetes would have
// to count generations otherwise).
func validateVolumeAttachmentSpecUnchanged(va, old *storagev1.VolumeAttachment) field.ErrorList {
	if !apiequality.Semantic.DeepEqual(va.Spec, old.Spec) {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), va.Spec, "field is immutable")}
	}
	return nil
}

func validateVolumeAttachmentStatus(s *storagev1.VolumeAttachmentStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	var size int64
	for k, v := range s.AttachmentMetadata {
		size += int64(len(k)) + int64(len(v))
	}
	if size > maxAttachedVolumeMetadataSize {
		errs = append(errs, field.TooLong(fldPath.Child("attachmentMetadata"), "", maxAttachedVolumeMetadataSize))
	}
	errs = append(errs, validateVolumeError(s.AttachError, fldPath.Child("attachError"))...)
	return append(errs, validateVolumeError(s.DetachError, fldPath.Child("detachError"))...)
}

func validateVolumeError(e *storagev1.VolumeError, fldPath *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if len(e.Message) > maxVolumeErrorMessageSize {
		errs = append(errs, field.TooLong(fldPath.Child("message"), "", maxVolumeErrorMessageSize))
	}
	if e.ErrorCode != nil && *e.ErrorCode < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("errorCode"), *e.ErrorCode, validation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return errs
}
