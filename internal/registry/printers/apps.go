package printers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

// defaultReplicas is what Kubernetes defaults an unset replicas field to; stored objects are
// defaulted, so this only matters for objects printed before defaulting.
const defaultReplicas = 1

func replicasOrDefault(r *int32) int64 {
	if r == nil {
		return defaultReplicas
	}
	return int64(*r)
}

// containerCells lays out the containers' names and images, comma-separated, in spec order.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	i := make([]string, len(containers))
	for idx, c := range containers {
		n[idx], i[idx] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

func deploymentPrinter() *registry.TablePrinter {
	status := appsv1.DeploymentStatus{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Ready", columnTypeString, "Number of the pod with ready state"),
			column("Up-to-date", columnTypeString, status["updatedReplicas"]),
			column("Available", columnTypeString, status["availableReplicas"]),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			wide(column("Selector", columnTypeString, appsv1.DeploymentSpec{}.SwaggerDoc()["selector"])),
		},
		Row: typedRow("deployments", func(d *appsv1.Deployment, now time.Time) ([]interface{}, error) {
			names, images := containerCells(d.Spec.Template.Spec.Containers)
			// Unlike the other workloads, Kubernetes prints a deployment's selector without
			// FormatLabelSelector's "<none>" for an empty one.
			selector := "<invalid>"
			if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
				selector = s.String()
			}
			return []interface{}{
				d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicasOrDefault(d.Spec.Replicas)),
				int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), age(d.CreationTimestamp, now),
				names, images, selector,
			}, nil
		}),
	}
}

func replicaSetPrinter() *registry.TablePrinter {
	spec := appsv1.ReplicaSetSpec{}.SwaggerDoc()
	status := appsv1.ReplicaSetStatus{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Desired", columnTypeInt, spec["replicas"]),
			column("Current", columnTypeInt, status["replicas"]),
			column("Ready", columnTypeInt, status["readyReplicas"]),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			wide(column("Selector", columnTypeString, spec["selector"])),
		},
		Row: typedRow("replicasets", func(rs *appsv1.ReplicaSet, now time.Time) ([]interface{}, error) {
			names, images := containerCells(rs.Spec.Template.Spec.Containers)
			return []interface{}{
				rs.Name, replicasOrDefault(rs.Spec.Replicas), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
				age(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
			}, nil
		}),
	}
}

// replicationControllerPrinter has the ReplicaSet columns; the selector is the RC's plain map.
func replicationControllerPrinter() *registry.TablePrinter {
	spec := corev1.ReplicationControllerSpec{}.SwaggerDoc()
	status := corev1.ReplicationControllerStatus{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Desired", columnTypeInt, spec["replicas"]),
			column("Current", columnTypeInt, status["replicas"]),
			column("Ready", columnTypeInt, status["readyReplicas"]),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			wide(column("Selector", columnTypeString, spec["selector"])),
		},
		Row: typedRow("replicationcontrollers", func(rc *corev1.ReplicationController, now time.Time) ([]interface{}, error) {
			var names, images string
			if rc.Spec.Template != nil {
				names, images = containerCells(rc.Spec.Template.Spec.Containers)
			}
			return []interface{}{
				rc.Name, replicasOrDefault(rc.Spec.Replicas), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
				age(rc.CreationTimestamp, now), names, images, labels.FormatLabels(rc.Spec.Selector),
			}, nil
		}),
	}
}

func statefulSetPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Ready", columnTypeString, "Number of the pod with ready state"),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
		},
		Row: typedRow("statefulsets", func(ss *appsv1.StatefulSet, now time.Time) ([]interface{}, error) {
			names, images := containerCells(ss.Spec.Template.Spec.Containers)
			return []interface{}{
				ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, replicasOrDefault(ss.Spec.Replicas)),
				age(ss.CreationTimestamp, now), names, images,
			}, nil
		}),
	}
}

func daemonSetPrinter() *registry.TablePrinter {
	status := appsv1.DaemonSetStatus{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Desired", columnTypeInt, status["desiredNumberScheduled"]),
			column("Current", columnTypeInt, status["currentNumberScheduled"]),
			column("Ready", columnTypeInt, status["numberReady"]),
			column("Up-to-date", columnTypeInt, status["updatedNumberScheduled"]),
			column("Available", columnTypeInt, status["numberAvailable"]),
			column("Node Selector", columnTypeString, corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			wide(column("Selector", columnTypeString, appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"])),
		},
		Row: typedRow("daemonsets", func(ds *appsv1.DaemonSet, now time.Time) ([]interface{}, error) {
			names, images := containerCells(ds.Spec.Template.Spec.Containers)
			s := ds.Status
			return []interface{}{
				ds.Name, int64(s.DesiredNumberScheduled), int64(s.CurrentNumberScheduled), int64(s.NumberReady),
				int64(s.UpdatedNumberScheduled), int64(s.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
				age(ds.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
			}, nil
		}),
	}
}

func controllerRevisionPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Controller", columnTypeString, "Controller of the object"),
			column("Revision", columnTypeString, appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
			ageColumn(),
		},
		Row: typedRow("controllerrevisions", func(cr *appsv1.ControllerRevision, now time.Time) ([]interface{}, error) {
			controller := noneCell
			if ref := metav1.GetControllerOf(cr); ref != nil {
				gv, err := schema.ParseGroupVersion(ref.APIVersion)
				if err != nil {
					return nil, fmt.Errorf("print controllerrevision %s: owner apiVersion %q: %w", cr.Name, ref.APIVersion, err)
				}
				// "daemonset.apps/name": the kind qualified by its group, lower-cased.
				gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
				controller = ref.Name
				if !gk.Empty() {
					controller = strings.ToLower(gk.String()) + "/" + ref.Name
				}
			}
			return []interface{}{cr.Name, controller, cr.Revision, age(cr.CreationTimestamp, now)}, nil
		}),
	}
}
