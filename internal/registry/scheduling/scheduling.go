package scheduling

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Priority limits Kubernetes defines: user classes stay at or below HighestUserDefinablePriority so
// the system classes always outrank them.
const (
	HighestUserDefinablePriority = int32(1000000000)
	SystemCriticalPriority       = 2 * HighestUserDefinablePriority
	SystemClusterCritical        = "system-cluster-critical"
	SystemNodeCritical           = "system-node-critical"
	systemPrefix                 = "system-"
)

var preemptionPolicies = []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}

// SystemPriorityClasses returns the classes the API server creates at start, defaulted as stored.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{
			ObjectMeta:       metav1.ObjectMeta{Name: SystemNodeCritical},
			Value:            SystemCriticalPriority + 1000,
			Description:      "Used for system critical pods that must not be moved from their current node.",
			PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
		},
		{
			ObjectMeta:       metav1.ObjectMeta{Name: SystemClusterCritical},
			Value:            SystemCriticalPriority,
			Description:      "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
			PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
		},
	}
}

// Resources returns the scheduling.k8s.io/v1 resources.
//
// Kubernetes also refuses a second class with globalDefault true; that needs a list of the stored
// classes, so the API server's admission has to check it (this strategy cannot).
func Resources() []*registry.Resource {
	return []*registry.Resource{{
		GroupVersion: schedulingv1.SchemeGroupVersion, Kind: "PriorityClass", ListKind: "PriorityClassList",
		Plural: "priorityclasses", Singular: "priorityclass", ShortNames: []string{"pc"},
		New:     func() runtime.Object { return &schedulingv1.PriorityClass{} },
		NewList: func() runtime.Object { return &schedulingv1.PriorityClassList{} },
		Strategy: priorityClassStrategy{&vu.Strategy[*schedulingv1.PriorityClass]{
			// Kubernetes starts a PriorityClass at generation 1 and never bumps it.
			OnCreate:             func(_ context.Context, pc *schedulingv1.PriorityClass) { pc.Generation = 1 },
			ValidateObject:       ValidatePriorityClass,
			ValidateUpdateObject: validatePriorityClassChange,
			UnconditionalUpdate:  true,
		}},
	}}
}

// RegisterDefaults registers preemptionPolicy PreemptLowerPriority on s.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register scheduling.k8s.io/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&schedulingv1.PriorityClass{}, func(o any) { DefaultPriorityClass(o.(*schedulingv1.PriorityClass)) })
	s.AddTypeDefaultingFunc(&schedulingv1.PriorityClassList{}, func(o any) {
		l := o.(*schedulingv1.PriorityClassList)
		for i := range l.Items {
			DefaultPriorityClass(&l.Items[i])
		}
	})
	return nil
}

// DefaultPriorityClass sets preemptionPolicy PreemptLowerPriority when unset.
func DefaultPriorityClass(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		pc.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	}
}

// ValidatePriorityClass checks the reserved "system-" names, the user value ceiling and the
// preemption policy.
func ValidatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, systemPrefix) {
		if err := knownSystemClass(pc); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
	}
	if pc.PreemptionPolicy != nil {
		p := field.NewPath("preemptionPolicy")
		switch *pc.PreemptionPolicy {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(p, ""))
		default:
			errs = append(errs, field.NotSupported(p, *pc.PreemptionPolicy, preemptionPolicies))
		}
	}
	return errs
}

func knownSystemClass(pc *schedulingv1.PriorityClass) error {
	for _, sys := range SystemPriorityClasses() {
		if sys.Name != pc.Name {
			continue
		}
		if sys.Value != pc.Value {
			return fmt.Errorf("value of %v PriorityClass must be %v", sys.Name, sys.Value)
		}
		if sys.GlobalDefault != pc.GlobalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", sys.Name, sys.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", pc.Name)
}

// validatePriorityClassChange: value and preemptionPolicy are fixed once created.
func validatePriorityClassChange(pc, old *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if pc.Value != old.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	return append(errs, vu.Immutable(pc.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
}

// priorityClassStrategy refuses deleting the system classes, as Kubernetes' PriorityClass storage
// does: the scheduler, kubelet and the cluster's own pods rely on them. Changing them is already
// refused where it matters: a system class's value and globalDefault are fixed by validation (and
// every class's value and preemptionPolicy by the update validation); labels, annotations and the
// description may change, as upstream.
type priorityClassStrategy struct {
	*vu.Strategy[*schedulingv1.PriorityClass]
}

var _ registry.DeleteValidator = priorityClassStrategy{}

// ValidateDelete refuses deleting a system priority class.
func (priorityClassStrategy) ValidateDelete(_ context.Context, _, name string) error {
	for _, sys := range SystemPriorityClasses() {
		if sys.Name == name {
			return apierrors.NewForbidden(schedulingv1.Resource("priorityclasses"), name, errors.New("this is a system priority class and cannot be deleted"))
		}
	}
	return nil
}
