package events

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

var when = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)

func event(mods ...func(*eventsv1.Event)) *eventsv1.Event {
	e := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web.1", Namespace: "default"},
		EventTime:           metav1.NewMicroTime(when),
		ReportingController: "skiff.dev/scheduler",
		ReportingInstance:   "scheduler-node-a",
		Action:              "Binding",
		Reason:              "Scheduled",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Note:                "assigned default/web to node-a",
		Type:                corev1.EventTypeNormal,
	}
	for _, m := range mods {
		m(e)
	}
	return e
}

func TestConversionRoundTrip(t *testing.T) {
	full := event(func(e *eventsv1.Event) {
		e.Series = &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(when.Add(time.Minute))}
		e.Related = &corev1.ObjectReference{Kind: "Node", Name: "node-a"}
		e.DeprecatedSource = corev1.EventSource{Component: "kubelet", Host: "node-a"}
		e.DeprecatedFirstTimestamp = metav1.NewTime(when.Truncate(time.Second))
		e.DeprecatedLastTimestamp = metav1.NewTime(when.Add(time.Hour).Truncate(time.Second))
		e.DeprecatedCount = 7
	})
	core := ToCore(full)
	if core.InvolvedObject.Name != "web" || core.Message != full.Note || core.ReportingController != "skiff.dev/scheduler" ||
		core.Source.Component != "kubelet" || core.Count != 7 || core.Series.Count != 3 || !core.FirstTimestamp.Equal(&full.DeprecatedFirstTimestamp) ||
		core.Related.Name != "node-a" || core.Kind != "Event" || core.APIVersion != "v1" {
		t.Fatalf("ToCore = %+v", core)
	}
	back := FromCore(core)
	if back.APIVersion != "events.k8s.io/v1" || back.Kind != "Event" {
		t.Fatalf("FromCore type meta = %v", back.TypeMeta)
	}
	back.TypeMeta, full.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	if !apiequality.Semantic.DeepEqual(back, full) {
		t.Fatalf("round trip differs:\n%+v\n%+v", back, full)
	}
	// The results must not alias the input.
	core.InvolvedObject.Name = "changed"
	core.Series.Count = 99
	if full.Regarding.Name != "web" || full.Series.Count != 3 {
		t.Fatal("ToCore aliases its input")
	}
	legacy := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}, Message: "old style", Count: 2, Source: corev1.EventSource{Component: "kubelet"}}
	if got := ToCore(FromCore(legacy)); got.Message != "old style" || got.Count != 2 || got.Source.Component != "kubelet" {
		t.Fatalf("legacy round trip = %+v", got)
	}
	if FromCore(nil) != nil || ToCore(nil) != nil {
		t.Fatal("nil not preserved")
	}
}

func TestValidateEventCreate(t *testing.T) {
	tests := []struct {
		name string
		obj  *eventsv1.Event
		want *errtest.Want
	}{
		{"valid", event(), nil},
		{"cluster object in default", event(func(e *eventsv1.Event) { e.Regarding = corev1.ObjectReference{Kind: "Node", Name: "a"} }), nil},
		{"no eventTime", event(func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} }), &errtest.Want{Field: "eventTime", Type: field.ErrorTypeRequired}},
		{"no controller", event(func(e *eventsv1.Event) { e.ReportingController = "" }), &errtest.Want{Field: "reportingController", Type: field.ErrorTypeRequired}},
		{"bad controller", event(func(e *eventsv1.Event) { e.ReportingController = "not valid!" }), &errtest.Want{Field: "reportingController", Type: field.ErrorTypeInvalid}},
		{"no instance", event(func(e *eventsv1.Event) { e.ReportingInstance = "" }), &errtest.Want{Field: "reportingInstance", Type: field.ErrorTypeRequired}},
		{"no action", event(func(e *eventsv1.Event) { e.Action = "" }), &errtest.Want{Field: "action", Type: field.ErrorTypeRequired}},
		{"long reason", event(func(e *eventsv1.Event) { e.Reason = strings.Repeat("r", 129) }), &errtest.Want{Field: "reason", Type: field.ErrorTypeInvalid, Detail: "can have at most 128 characters"}},
		{"long note", event(func(e *eventsv1.Event) { e.Note = strings.Repeat("n", 1025) }), &errtest.Want{Field: "message", Type: field.ErrorTypeInvalid, Detail: "can have at most 1024 characters"}},
		{"bad type", event(func(e *eventsv1.Event) { e.Type = "Info" }), &errtest.Want{Field: "type", Type: field.ErrorTypeInvalid, Detail: "has invalid value: Info"}},
		{"deprecated count", event(func(e *eventsv1.Event) { e.DeprecatedCount = 2 }), &errtest.Want{Field: "count", Type: field.ErrorTypeInvalid, Detail: "needs to be unset"}},
		{"deprecated source", event(func(e *eventsv1.Event) { e.DeprecatedSource.Host = "a" }), &errtest.Want{Field: "source", Type: field.ErrorTypeInvalid, Detail: "needs to be unset"}},
		{"short series", event(func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(when)}
		}), &errtest.Want{Field: "series.count", Type: field.ErrorTypeInvalid, Detail: "should be at least 2"}},
		{"namespace mismatch", event(func(e *eventsv1.Event) { e.Namespace = "other" }), nil},
		{"cluster object outside default", event(func(e *eventsv1.Event) { e.Namespace = "team"; e.Regarding.Namespace = "" }), &errtest.Want{Field: "involvedObject.namespace", Type: field.ErrorTypeInvalid, Detail: "does not match event.namespace"}},
		{"bad name", event(func(e *eventsv1.Event) { e.Name = "Bad_Name" }), &errtest.Want{Field: "metadata.name", Type: field.ErrorTypeInvalid}},
	}
	r := Resources()[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestValidateEventUpdate(t *testing.T) {
	ctx := context.Background()
	r := Resources()[0]
	old := event(func(e *eventsv1.Event) { e.ResourceVersion = "1" })
	series := old.DeepCopy()
	series.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(when.Add(time.Minute))}
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, series, old), nil)
	nanos := old.DeepCopy()
	nanos.EventTime = metav1.NewMicroTime(when.Add(500 * time.Nanosecond))
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, nanos, old), nil)
	retimed := old.DeepCopy()
	retimed.EventTime = metav1.NewMicroTime(when.Add(time.Second))
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, retimed, old), &errtest.Want{Field: "eventTime", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
	renoted := old.DeepCopy()
	renoted.Note = "different"
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, renoted, old), &errtest.Want{Field: "message", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
	badSeries := old.DeepCopy()
	badSeries.Series = &eventsv1.EventSeries{Count: 5}
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, badSeries, old), &errtest.Want{Field: "series.lastObservedTime", Type: field.ErrorTypeRequired})
}

func TestResource(t *testing.T) {
	r := Resources()[0]
	if r.StorageGroup != "" || r.StorageResource != "events" || r.GroupVersion.Group != "events.k8s.io" || !r.Namespaced || !r.Strategy.AllowCreateOnUpdate() {
		t.Fatalf("resource = %+v", r)
	}
}

func TestSelectableFields(t *testing.T) {
	e := &eventsv1.Event{
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "u1", APIVersion: "v1", FieldPath: "spec.containers{app}"},
		Reason:              "Started",
		ReportingController: "skiff.dev/kubelet",
		Type:                corev1.EventTypeNormal,
	}
	got := SelectableFields(e)
	for k, want := range map[string]string{
		"regarding.kind": "Pod", "regarding.namespace": "default", "regarding.name": "web", "regarding.uid": "u1",
		"regarding.fieldPath": "spec.containers{app}", "reason": "Started", "reportingController": "skiff.dev/kubelet", "type": "Normal",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if SelectableFields(&corev1.Event{}) != nil {
		t.Error("a core event has no events.k8s.io fields")
	}
}
