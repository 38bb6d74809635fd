package printers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
)

// eventView is the part of an event the table shows. core/v1 and events.k8s.io/v1 events are one
// stored type in Kubernetes and print identically, so both are mapped onto this.
type eventView struct {
	name                string
	eventType           string
	reason              string
	message             string
	regarding           corev1.ObjectReference
	source              corev1.EventSource
	reportingController string
	reportingInstance   string
	firstTimestamp      metav1.Time
	lastTimestamp       metav1.Time
	eventTime           metav1.MicroTime
	count               int32
	series              *eventSeries
}

type eventSeries struct {
	count            int32
	lastObservedTime metav1.MicroTime
}

func eventColumns() []metav1.TableColumnDefinition {
	doc := corev1.Event{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		column("Last Seen", columnTypeString, doc["lastTimestamp"]),
		column("Type", columnTypeString, doc["type"]),
		column("Reason", columnTypeString, doc["reason"]),
		column("Object", columnTypeString, doc["involvedObject"]),
		wide(column("Subobject", columnTypeString, corev1.ObjectReference{}.SwaggerDoc()["fieldPath"])),
		wide(column("Source", columnTypeString, doc["source"])),
		column("Message", columnTypeString, doc["message"]),
		wide(column("First Seen", columnTypeString, doc["firstTimestamp"])),
		wide(column("Count", columnTypeString, doc["count"])),
		{Name: "Name", Type: columnTypeString, Format: "name", Priority: 1, Description: objectMetaDoc("name")},
	}
}

func coreEventPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: eventColumns(),
		Row: typedRow("events", func(e *corev1.Event, now time.Time) ([]interface{}, error) {
			v := eventView{
				name: e.Name, eventType: e.Type, reason: e.Reason, message: e.Message,
				regarding: e.InvolvedObject, source: e.Source,
				reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
				firstTimestamp: e.FirstTimestamp, lastTimestamp: e.LastTimestamp, eventTime: e.EventTime, count: e.Count,
			}
			if e.Series != nil {
				v.series = &eventSeries{count: e.Series.Count, lastObservedTime: e.Series.LastObservedTime}
			}
			return eventRow(&v, now), nil
		}),
	}
}

func eventsV1Printer() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: eventColumns(),
		Row: typedRow("events.events.k8s.io", func(e *eventsv1.Event, now time.Time) ([]interface{}, error) {
			v := eventView{
				name: e.Name, eventType: e.Type, reason: e.Reason, message: e.Note,
				regarding: e.Regarding, source: e.DeprecatedSource,
				reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
				firstTimestamp: e.DeprecatedFirstTimestamp, lastTimestamp: e.DeprecatedLastTimestamp,
				eventTime: e.EventTime, count: e.DeprecatedCount,
			}
			if e.Series != nil {
				v.series = &eventSeries{count: e.Series.Count, lastObservedTime: e.Series.LastObservedTime}
			}
			return eventRow(&v, now), nil
		}),
	}
}

// eventRow prints an event. New-style events carry eventTime and a series instead of the
// first/last timestamps and count, so each cell falls back to them.
func eventRow(e *eventView, now time.Time) []interface{} {
	first := age(e.firstTimestamp, now)
	if e.firstTimestamp.IsZero() {
		first = microAge(e.eventTime, now)
	}
	last := age(e.lastTimestamp, now)
	if e.lastTimestamp.IsZero() {
		last = first
	}
	count := e.count
	switch {
	case e.series != nil:
		last = microAge(e.series.lastObservedTime, now)
		count = e.series.count
	case count == 0:
		count = 1 // a singleton new-style event has no count
	}

	object := strings.ToLower(e.regarding.Kind)
	if e.regarding.Name != "" {
		object = fmt.Sprintf("%s/%s", object, e.regarding.Name)
	}
	return []interface{}{
		last, e.eventType, e.reason, object, e.regarding.FieldPath,
		eventSource(e), strings.TrimSpace(e.message), first, int64(count), e.name,
	}
}

// eventSource prints "component, host", taking the reporting controller and instance where the
// deprecated source fields are empty.
func eventSource(e *eventView) string {
	component := e.source.Component
	if component == "" {
		component = e.reportingController
	}
	host := e.source.Host
	if host == "" {
		host = e.reportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}
