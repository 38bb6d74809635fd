package printers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/skiff-sh/skiff/internal/registry"
)

// Group names of the resources printed here.
const (
	groupCore        = ""
	groupApps        = "apps"
	groupBatch       = "batch"
	groupCoordinate  = "coordination.k8s.io"
	groupDiscovery   = "discovery.k8s.io"
	groupEvents      = "events.k8s.io"
	groupPolicy      = "policy"
	groupRBAC        = "rbac.authorization.k8s.io"
	groupScheduling  = "scheduling.k8s.io"
	groupStorage     = "storage.k8s.io"
	groupNode        = "node.k8s.io"
	groupNetworking  = "networking.k8s.io"
	groupFlowcontrol = "flowcontrol.apiserver.k8s.io"
	groupAutoscaling = "autoscaling"
	noneCell         = "<none>"
	unknownCell      = "<unknown>"
	unsetCell        = "<unset>"
	columnTypeString = "string"
	columnTypeInt    = "integer"
	columnTypeBool   = "boolean"
)

// ForResource returns the printer Kubernetes' API server uses for gr, or nil when gr is not a
// built-in resource known here. Resources that Kubernetes prints with its default table (limit
// ranges, roles, cluster roles) get Default().
func ForResource(gr schema.GroupResource) *registry.TablePrinter {
	switch gr.Group {
	case groupCore:
		return corePrinter(gr.Resource)
	case groupApps:
		return appsPrinter(gr.Resource)
	case groupBatch:
		return batchPrinter(gr.Resource)
	case groupCertificates:
		if gr.Resource == "certificatesigningrequests" {
			return certificateSigningRequestPrinter()
		}
	case groupCoordinate:
		if gr.Resource == "leases" {
			return leasePrinter()
		}
	case groupDiscovery:
		if gr.Resource == "endpointslices" {
			return endpointSlicePrinter()
		}
	case groupEvents:
		if gr.Resource == "events" {
			return eventsV1Printer()
		}
	case groupPolicy:
		if gr.Resource == "poddisruptionbudgets" {
			return podDisruptionBudgetPrinter()
		}
	case groupRBAC:
		return rbacPrinter(gr.Resource)
	case groupScheduling:
		if gr.Resource == "priorityclasses" {
			return priorityClassPrinter()
		}
	case groupStorage:
		return storagePrinter(gr.Resource)
	case groupNetworking:
		return networkingPrinter(gr.Resource)
	case groupFlowcontrol:
		return flowcontrolPrinter(gr.Resource)
	case groupAutoscaling:
		if gr.Resource == "horizontalpodautoscalers" {
			return horizontalPodAutoscalerPrinter()
		}
	case groupAdmissionRegistration:
		return admissionRegistrationPrinter(gr.Resource)
	case groupNode:
		if gr.Resource == "runtimeclasses" {
			return runtimeClassPrinter()
		}
	}
	return nil
}

func corePrinter(resource string) *registry.TablePrinter {
	switch resource {
	case "pods":
		return podPrinter()
	case "nodes":
		return nodePrinter()
	case "namespaces":
		return namespacePrinter()
	case "services":
		return servicePrinter()
	case "endpoints":
		return endpointsPrinter()
	case "configmaps":
		return configMapPrinter()
	case "secrets":
		return secretPrinter()
	case "serviceaccounts":
		return serviceAccountPrinter()
	case "events":
		return coreEventPrinter()
	case "limitranges":
		return Default()
	case "resourcequotas":
		return resourceQuotaPrinter()
	case "persistentvolumes":
		return persistentVolumePrinter()
	case "persistentvolumeclaims":
		return persistentVolumeClaimPrinter()
	case "podtemplates":
		return podTemplatePrinter()
	case "replicationcontrollers":
		return replicationControllerPrinter()
	case "componentstatuses":
		return componentStatusPrinter()
	}
	return nil
}

func appsPrinter(resource string) *registry.TablePrinter {
	switch resource {
	case "deployments":
		return deploymentPrinter()
	case "replicasets":
		return replicaSetPrinter()
	case "statefulsets":
		return statefulSetPrinter()
	case "daemonsets":
		return daemonSetPrinter()
	case "controllerrevisions":
		return controllerRevisionPrinter()
	}
	return nil
}

func batchPrinter(resource string) *registry.TablePrinter {
	switch resource {
	case "jobs":
		return jobPrinter()
	case "cronjobs":
		return cronJobPrinter()
	}
	return nil
}

func rbacPrinter(resource string) *registry.TablePrinter {
	switch resource {
	case "roles", "clusterroles":
		return Default()
	case "rolebindings":
		return roleBindingPrinter()
	case "clusterrolebindings":
		return clusterRoleBindingPrinter()
	}
	return nil
}

// Default is the table Kubernetes' API server prints for a type without its own printer (and for
// custom resources without additionalPrinterColumns): the name and the creation time as an
// RFC 3339 timestamp, which kubectl shows as CREATED AT.
func Default() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Created At", Type: "date", Description: objectMetaDoc("creationTimestamp")},
		},
		Row: func(obj runtime.Object, _ time.Time) ([]interface{}, error) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, fmt.Errorf("print %T as a table: %w", obj, err)
			}
			return []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}, nil
		},
	}
}

// typedRow adapts a printer for one Go type to TablePrinter.Row, refusing any other type.
func typedRow[T runtime.Object](resource string, row func(obj T, now time.Time) ([]interface{}, error)) func(runtime.Object, time.Time) ([]interface{}, error) {
	return func(obj runtime.Object, now time.Time) ([]interface{}, error) {
		typed, ok := obj.(T)
		if !ok {
			var want T
			return nil, fmt.Errorf("print %s: got a %T, want a %T", resource, obj, want)
		}
		return row(typed, now)
	}
}

// Column helpers: Kubernetes names columns in title case ("Nominated Node"); kubectl upper-cases
// them for display.

func objectMetaDoc(field string) string { return metav1.ObjectMeta{}.SwaggerDoc()[field] }

func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: columnTypeString, Format: "name", Description: objectMetaDoc("name")}
}

func ageColumn() metav1.TableColumnDefinition {
	return column("Age", columnTypeString, objectMetaDoc("creationTimestamp"))
}

func column(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}

// wide marks a column shown only with -o wide.
func wide(c metav1.TableColumnDefinition) metav1.TableColumnDefinition {
	c.Priority = 1
	return c
}

func containersColumn() metav1.TableColumnDefinition {
	return wide(column("Containers", columnTypeString, "Names of each container in the template."))
}

func imagesColumn() metav1.TableColumnDefinition {
	return wide(column("Images", columnTypeString, "Images referenced by each container in the template."))
}

// age is the human-readable time since t as of now, "<unknown>" for an unset time.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return unknownCell
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// microAge is age for a MicroTime.
func microAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return unknownCell
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// orNone replaces an empty cell with "<none>".
func orNone(s string) string {
	if s == "" {
		return noneCell
	}
	return s
}

// boolPtrCell prints an optional boolean as Kubernetes does: True, False or <unset>.
func boolPtrCell(b *bool) string {
	switch {
	case b == nil:
		return unsetCell
	case *b:
		return "True"
	default:
		return "False"
	}
}
