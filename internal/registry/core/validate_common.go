package core

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Messages Kubernetes uses verbatim; clients and tests match on them.
const (
	msgFieldImmutable   = "field is immutable"
	msgNegative         = "must be greater than or equal to 0"
	msgNotPositive      = "must be greater than zero"
	msgNotInteger       = "must be an integer"
	msgInvalidQuotaName = "must be a standard resource for quota"
)

var (
	metadataPath = field.NewPath("metadata")
	specPath     = field.NewPath("spec")
	statusPath   = field.NewPath("status")
)

// validateObjectMeta checks metadata for create with the type's name rule.
func validateObjectMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apivalidation.ValidateNameFunc) field.ErrorList {
	return apivalidation.ValidateObjectMeta(meta, namespaced, nameFn, metadataPath)
}

func validateObjectMetaUpdate(meta, old *metav1.ObjectMeta) field.ErrorList {
	return apivalidation.ValidateObjectMetaUpdate(meta, old, metadataPath)
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateNonnegativeQuantity(value resource.Quantity, fldPath *field.Path) field.ErrorList {
	if value.Cmp(resource.Quantity{}) < 0 {
		return field.ErrorList{field.Invalid(fldPath, value.String(), msgNegative)}
	}
	return nil
}

func validatePositiveQuantity(value resource.Quantity, fldPath *field.Path) field.ErrorList {
	if value.Cmp(resource.Quantity{}) <= 0 {
		return field.ErrorList{field.Invalid(fldPath, value.String(), msgNotPositive)}
	}
	return nil
}

func validateNonnegativeInt(value int64, fldPath *field.Path) field.ErrorList {
	if value < 0 {
		return field.ErrorList{field.Invalid(fldPath, value, msgNegative)}
	}
	return nil
}

// standardContainerResources are the resource names a container may request without a domain.
var standardContainerResources = sets.New("cpu", "memory", "ephemeral-storage")

func isHugePageResource(name string) bool {
	return strings.HasPrefix(name, corev1.ResourceHugePagesPrefix)
}

// isIntegerResource reports resources whose quantities must be whole numbers (everything but cpu
// and memory-like standard resources: counts, extended resources).
func isIntegerResource(name string) bool {
	switch name {
	case "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
		"persistentvolumeclaims", "services.nodeports", "services.loadbalancers":
		return true
	}
	if strings.HasPrefix(name, "count/") {
		return true
	}
	return isExtendedResource(name)
}

// isExtendedResource: a domain-prefixed name outside kubernetes.io, and not a quota "requests." name.
func isExtendedResource(name string) bool {
	if !strings.Contains(name, "/") || strings.HasPrefix(name, "requests.") {
		return false
	}
	domain := name[:strings.Index(name, "/")]
	if domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") {
		return false
	}
	return true
}

func isOvercommitAllowed(name string) bool {
	return !isHugePageResource(name) && !isExtendedResource(name)
}

func validateResourceName(value string, fldPath *field.Path) field.ErrorList {
	errs := validateQualifiedName(value, fldPath)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func validateContainerResourceName(value string, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(value, fldPath)
	if len(errs) > 0 {
		return errs
	}
	if !strings.Contains(value, "/") {
		if !standardContainerResources.Has(value) && !isHugePageResource(value) {
			return append(errs, field.Invalid(fldPath, value, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(value) && !isExtendedResource(value) {
		return append(errs, field.Invalid(fldPath, value, "doesn't follow extended resource name standard"))
	}
	return errs
}

func isNativeResource(name string) bool {
	if !strings.Contains(name, "/") {
		return true
	}
	domain := name[:strings.Index(name, "/")]
	return domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io")
}

// validateResourceQuantityValue: non-negative, and whole for integer resources.
func validateResourceQuantityValue(name string, value resource.Quantity, fldPath *field.Path) field.ErrorList {
	errs := validateNonnegativeQuantity(value, fldPath)
	if isIntegerResource(name) && value.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, value.String(), msgNotInteger))
	}
	return errs
}

func validateLabels(labels map[string]string, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(labels, fldPath)
}

func validateLabelSelector(sel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
}

// validateIP checks an IP address field the way Kubernetes reports it.
func validateIP(value string, fldPath *field.Path) field.ErrorList {
	return validation.IsValidIPForLegacyField(fldPath, value, false, nil)
}

func validateCIDR(value string, fldPath *field.Path) field.ErrorList {
	return validation.IsValidCIDRForLegacyField(fldPath, value, false, nil)
}

// validateNonSpecialIP rejects addresses that can never be an endpoint.
func validateNonSpecialIP(value string, fldPath *field.Path) field.ErrorList {
	addr, err := netip.ParseAddr(value)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, value, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if addr.IsUnspecified() {
		errs = append(errs, field.Invalid(fldPath, value, fmt.Sprintf("may not be unspecified (%v)", value)))
	}
	if addr.IsLoopback() {
		errs = append(errs, field.Invalid(fldPath, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if addr.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fldPath, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if addr.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fldPath, value, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validateImmutable(newVal, oldVal interface{}, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateImmutableField(newVal, oldVal, fldPath)
}

// validateFinalizerName accepts the legacy "kubernetes" finalizer and qualified names.
func validateFinalizerName(value string, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateFinalizerName(value, fldPath)
	if !strings.Contains(value, "/") && value != string(corev1.FinalizerKubernetes) {
		errs = append(errs, field.Invalid(fldPath, value, "name is neither a standard finalizer name nor is it fully qualified"))
	}
	return errs
}

func stringsOf[T ~string](values ...T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// validateEnum reports Required for "" and NotSupported for anything outside supported.
func validateEnum[T ~string](value T, fldPath *field.Path, supported ...T) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	for _, s := range supported {
		if value == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, value, stringsOf(supported...))}
}

// validateOptionalEnum is validateEnum where "" is allowed.
func validateOptionalEnum[T ~string](value T, fldPath *field.Path, supported ...T) field.ErrorList {
	if value == "" {
		return nil
	}
	return validateEnum(value, fldPath, supported...)
}
