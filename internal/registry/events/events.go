package events

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Length limits Kubernetes sets on event fields.
const (
	reportingInstanceLimit = 128
	actionLimit            = 128
	reasonLimit            = 128
	noteLimit              = 1024
)

// Resources returns events.k8s.io/v1 events, stored with core/v1 events: the API server converts
// with FromCore/ToCore around the storage codec. Validation reports Kubernetes' field paths, which
// name the stored (core) fields, e.g. "involvedObject.namespace" and "message".
func Resources() []*registry.Resource {
	return []*registry.Resource{{
		GroupVersion: eventsv1.SchemeGroupVersion, Kind: "Event", ListKind: "EventList",
		Plural: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true,
		StorageGroup: "", StorageResource: "events",
		New:     func() runtime.Object { return &eventsv1.Event{} },
		NewList: func() runtime.Object { return &eventsv1.EventList{} },
		Strategy: &vu.Strategy[*eventsv1.Event]{
			Namespaced:           true,
			ValidateObject:       func(e *eventsv1.Event) field.ErrorList { return ValidateEventCreate(ToCore(e)) },
			ValidateUpdateObject: func(e, old *eventsv1.Event) field.ErrorList { return ValidateEventUpdate(ToCore(e), ToCore(old)) },
			CreateOnUpdate:       true,
			UnconditionalUpdate:  true,
		},
		SelectableFields: SelectableFields,
	}}
}

// SelectableFields are the field-selector fields of events.k8s.io/v1 events, the names Kubernetes
// maps onto the core fields (regarding.* for involvedObject.*, reportingController for
// reportingComponent).
func SelectableFields(obj runtime.Object) fields.Set {
	e, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil
	}
	return fields.Set{
		"regarding.kind":            e.Regarding.Kind,
		"regarding.namespace":       e.Regarding.Namespace,
		"regarding.name":            e.Regarding.Name,
		"regarding.uid":             string(e.Regarding.UID),
		"regarding.apiVersion":      e.Regarding.APIVersion,
		"regarding.resourceVersion": e.Regarding.ResourceVersion,
		"regarding.fieldPath":       e.Regarding.FieldPath,
		"reason":                    e.Reason,
		"reportingController":       e.ReportingController,
		"type":                      e.Type,
	}
}

// RegisterDefaults exists for symmetry with the other groups: events.k8s.io/v1 sets no defaults.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register events.k8s.io/v1 defaults: nil scheme")
	}
	return nil
}

// ValidateEventCreate applies the strict rules of the events.k8s.io API to a new event (in its core
// form): the legacy rules, then eventTime and type required, the deprecated fields unset, and a
// series of at least 2.
func ValidateEventCreate(e *corev1.Event) field.ErrorList {
	errs := validateLegacy(e)
	errs = append(errs, validateSeries(e)...)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	if !e.FirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !e.LastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if e.Count != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if e.Source.Component != "" || e.Source.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return errs
}

// ValidateEventUpdate applies the events.k8s.io update rules: the legacy rules, a changed series is
// re-validated, and everything but the series is immutable (eventTime to the microsecond).
func ValidateEventUpdate(e, old *corev1.Event) field.ErrorList {
	errs := validateLegacy(e)
	if !apiequality.Semantic.DeepEqual(e.Series, old.Series) {
		errs = append(errs, validateSeries(e)...)
	}
	immutable := []struct {
		name     string
		now, was any
	}{
		{"involvedObject", e.InvolvedObject, old.InvolvedObject},
		{"reason", e.Reason, old.Reason},
		{"message", e.Message, old.Message},
		{"source", e.Source, old.Source},
		{"firstTimestamp", e.FirstTimestamp, old.FirstTimestamp},
		{"lastTimestamp", e.LastTimestamp, old.LastTimestamp},
		{"count", e.Count, old.Count},
		{"type", e.Type, old.Type},
		{"action", e.Action, old.Action},
		{"related", e.Related, old.Related},
		{"reportingController", e.ReportingController, old.ReportingController},
		{"reportingInstance", e.ReportingInstance, old.ReportingInstance},
	}
	for _, f := range immutable {
		errs = append(errs, vu.Immutable(f.now, f.was, field.NewPath(f.name))...)
	}
	// Clients that serialize with microsecond precision must be able to write the event back.
	if !e.EventTime.Truncate(time.Microsecond).Equal(old.EventTime.Truncate(time.Microsecond)) {
		errs = append(errs, vu.Immutable(e.EventTime, old.EventTime, field.NewPath("eventTime"))...)
	}
	return errs
}

// validateLegacy holds the rules every event passes, whichever API wrote it.
func validateLegacy(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		// Old-style events: the event lives in its object's namespace ("default" for cluster objects).
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != "" && e.Namespace != "default" {
				errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		return errs
	}
	if e.InvolvedObject.Namespace == "" && e.Namespace != "default" && e.Namespace != "kube-system" {
		errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	rc := field.NewPath("reportingController")
	if e.ReportingController == "" {
		errs = append(errs, field.Required(rc, ""))
	}
	errs = append(errs, vu.QualifiedName(e.ReportingController, rc)...)
	required := []struct {
		name  string
		value string
		limit int
	}{
		{"reportingInstance", e.ReportingInstance, reportingInstanceLimit},
		{"action", e.Action, actionLimit},
		{"reason", e.Reason, reasonLimit},
	}
	for _, f := range required {
		if f.value == "" {
			errs = append(errs, field.Required(field.NewPath(f.name), ""))
		}
		if len(f.value) > f.limit {
			errs = append(errs, field.Invalid(field.NewPath(f.name), "", fmt.Sprintf("can have at most %v characters", f.limit)))
		}
	}
	if len(e.Message) > noteLimit {
		errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLimit)))
	}
	return errs
}

func validateSeries(e *corev1.Event) field.ErrorList {
	if e.Series == nil {
		return nil
	}
	var errs field.ErrorList
	if e.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}
