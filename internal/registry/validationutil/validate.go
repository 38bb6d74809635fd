package validationutil

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Messages Kubernetes returns, shared by several groups.
const (
	SelectorMismatchMsg  = "`selector` does not match template `labels`"
	NotMore100PercentMsg = "must not be greater than 100%"
)

// NonNegative is apimachinery's ">= 0" check for any integer width.
func NonNegative[I ~int32 | ~int64 | ~int](value I, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(int64(value), fldPath)
}

// NonNegativeIntOrPercent accepts a non-negative integer or a percentage string such as "25%".
func NonNegativeIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v.Type {
	case intstr.String:
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(fldPath, v, msg))
		}
	case intstr.Int:
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(v.IntVal), fldPath)...)
	default:
		errs = append(errs, field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%')"))
	}
	return errs
}

// PercentValue returns the number in a percentage int-or-string and whether it is one.
func PercentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String {
		return 0, false
	}
	s := strings.TrimSuffix(v.StrVal, "%")
	if s == v.StrVal {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, false
	}
	return n, true
}

// IntOrPercentValue is the number in an int-or-string, percent or not (0 when unparsable).
func IntOrPercentValue(v intstr.IntOrString) int {
	if n, ok := PercentValue(v); ok {
		return n
	}
	if v.Type == intstr.Int {
		return int(v.IntVal)
	}
	return 0
}

// NotMoreThan100Percent rejects percentages above 100%.
func NotMoreThan100Percent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if n, ok := PercentValue(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(fldPath, v, NotMore100PercentMsg)}
	}
	return nil
}

// WorkloadSelector checks a workload's required, non-empty selector and that it selects the
// template's labels. kind names the workload in the empty-selector message ("deployment").
func WorkloadSelector(selector *metav1.LabelSelector, templateLabels map[string]string, kind string, selPath, labelsPath *field.Path) field.ErrorList {
	if selector == nil {
		return field.ErrorList{field.Required(selPath, "")}
	}
	errs := metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, selPath)
	if len(selector.MatchLabels)+len(selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(selPath, selector, "empty selector is invalid for "+kind))
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return append(errs, field.Invalid(selPath, selector, "invalid label selector"))
	}
	if !sel.Empty() && !sel.Matches(labels.Set(templateLabels)) {
		errs = append(errs, field.Invalid(labelsPath, templateLabels, SelectorMismatchMsg))
	}
	return errs
}

// Immutable is apimachinery's "field is immutable" check.
func Immutable(newVal, oldVal any, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateImmutableField(newVal, oldVal, fldPath)
}

// EndpointIP rejects addresses that make no sense as a service endpoint: unspecified, loopback and
// link-local ones (the latter are node-centric, e.g. a metadata service).
func EndpointIP(address string, fldPath *field.Path) field.ErrorList {
	ip := net.ParseIP(address)
	if ip == nil {
		return field.ErrorList{field.Invalid(fldPath, address, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(fldPath, address, fmt.Sprintf("may not be unspecified (%v)", address)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(fldPath, address, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fldPath, address, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fldPath, address, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

// DNSLabel reports a value that is not an RFC 1123 label as Invalid at fldPath.
func DNSLabel(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// QualifiedName reports a value that is not a qualified name (optional DNS prefix and a name) as
// Invalid at fldPath.
func QualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// PathSegmentName is Kubernetes' name rule for objects whose names only need to be usable as one
// URL path segment (RBAC roles and bindings, whose names hold ':'): not "." or "..", and no '/' or
// '%'. With prefix (a generateName), only the characters are checked. apimachinery's own copy is
// deprecated in favour of local ones, so this is ours.
func PathSegmentName(name string, prefix bool) []string {
	if !prefix {
		for _, reserved := range []string{".", ".."} {
			if name == reserved {
				return []string{fmt.Sprintf("may not be '%s'", reserved)}
			}
		}
	}
	var errs []string
	for _, illegal := range []string{"/", "%"} {
		if strings.Contains(name, illegal) {
			errs = append(errs, fmt.Sprintf("may not contain '%s'", illegal))
		}
	}
	return errs
}
