package printers

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
)

// The annotations that mark the default storage class (the beta one is still honoured).
const (
	defaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaDefaultStorageClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

func storagePrinter(resource string) *registry.TablePrinter {
	switch resource {
	case "storageclasses":
		return storageClassPrinter()
	case "csidrivers":
		return csiDriverPrinter()
	case "csinodes":
		return csiNodePrinter()
	case "csistoragecapacities":
		return csiStorageCapacityPrinter()
	case "volumeattachments":
		return volumeAttachmentPrinter()
	case "volumeattributesclasses":
		return volumeAttributesClassPrinter()
	}
	return nil
}

// volumeAttributesClassPrinter prints Kubernetes' columns: NAME, DRIVERNAME, AGE.
func volumeAttributesClassPrinter() *registry.TablePrinter {
	doc := storagev1beta1.VolumeAttributesClass{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("DriverName", columnTypeString, doc["driverName"]),
			ageColumn(),
		},
		Row: typedRow("volumeattributesclasses", func(vac *storagev1beta1.VolumeAttributesClass, now time.Time) ([]interface{}, error) {
			return []interface{}{vac.Name, vac.DriverName, age(vac.CreationTimestamp, now)}, nil
		}),
	}
}

func storageClassPrinter() *registry.TablePrinter {
	doc := storagev1.StorageClass{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Provisioner", columnTypeString, doc["provisioner"]),
			column("ReclaimPolicy", columnTypeString, doc["reclaimPolicy"]),
			column("VolumeBindingMode", columnTypeString, doc["volumeBindingMode"]),
			column("AllowVolumeExpansion", columnTypeString, doc["allowVolumeExpansion"]),
			ageColumn(),
		},
		Row: typedRow("storageclasses", func(sc *storagev1.StorageClass, now time.Time) ([]interface{}, error) {
			name := sc.Name
			if sc.Annotations[defaultStorageClassAnnotation] == "true" || sc.Annotations[betaDefaultStorageClassAnnotation] == "true" {
				name += " (default)"
			}
			// Unset fields print as the defaults the API server would have set.
			reclaim := string(corev1.PersistentVolumeReclaimDelete)
			if sc.ReclaimPolicy != nil {
				reclaim = string(*sc.ReclaimPolicy)
			}
			binding := string(storagev1.VolumeBindingImmediate)
			if sc.VolumeBindingMode != nil {
				binding = string(*sc.VolumeBindingMode)
			}
			expansion := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
			return []interface{}{name, sc.Provisioner, reclaim, binding, expansion, age(sc.CreationTimestamp, now)}, nil
		}),
	}
}

func csiDriverPrinter() *registry.TablePrinter {
	doc := storagev1.CSIDriverSpec{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("AttachRequired", columnTypeBool, doc["attachRequired"]),
			column("PodInfoOnMount", columnTypeBool, doc["podInfoOnMount"]),
			column("StorageCapacity", columnTypeBool, doc["storageCapacity"]),
			column("TokenRequests", columnTypeString, doc["tokenRequests"]),
			column("RequiresRepublish", columnTypeBool, doc["requiresRepublish"]),
			column("Modes", columnTypeString, doc["volumeLifecycleModes"]),
			ageColumn(),
		},
		Row: typedRow("csidrivers", func(d *storagev1.CSIDriver, now time.Time) ([]interface{}, error) {
			tokenRequests := unsetCell
			if d.Spec.TokenRequests != nil {
				audiences := make([]string, 0, len(d.Spec.TokenRequests))
				for _, tr := range d.Spec.TokenRequests {
					audiences = append(audiences, tr.Audience)
				}
				tokenRequests = strings.Join(audiences, ",")
			}
			modes := make([]string, 0, len(d.Spec.VolumeLifecycleModes))
			for _, m := range d.Spec.VolumeLifecycleModes {
				modes = append(modes, string(m))
			}
			return []interface{}{
				d.Name, boolOr(d.Spec.AttachRequired, true), boolOr(d.Spec.PodInfoOnMount, false), boolOr(d.Spec.StorageCapacity, false),
				tokenRequests, boolOr(d.Spec.RequiresRepublish, false), orNone(strings.Join(modes, ",")), age(d.CreationTimestamp, now),
			}, nil
		}),
	}
}

func csiNodePrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Drivers", columnTypeInt, "Drivers indicates the number of CSI drivers registered on the node"),
			ageColumn(),
		},
		Row: typedRow("csinodes", func(n *storagev1.CSINode, now time.Time) ([]interface{}, error) {
			return []interface{}{n.Name, int64(len(n.Spec.Drivers)), age(n.CreationTimestamp, now)}, nil
		}),
	}
}

// csiStorageCapacityPrinter has no age column: Kubernetes prints none for capacities.
func csiStorageCapacityPrinter() *registry.TablePrinter {
	doc := storagev1.CSIStorageCapacity{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("StorageClassName", columnTypeString, doc["storageClassName"]),
			column("Capacity", columnTypeString, doc["capacity"]),
		},
		Row: typedRow("csistoragecapacities", func(c *storagev1.CSIStorageCapacity, _ time.Time) ([]interface{}, error) {
			capacity := unsetCell
			if c.Capacity != nil {
				capacity = c.Capacity.String()
			}
			return []interface{}{c.Name, c.StorageClassName, capacity}, nil
		}),
	}
}

func volumeAttachmentPrinter() *registry.TablePrinter {
	spec := storagev1.VolumeAttachmentSpec{}.SwaggerDoc()
	attacher := column("Attacher", columnTypeString, spec["attacher"])
	attacher.Format = "name" // as Kubernetes declares it
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			attacher,
			column("PV", columnTypeString, storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
			column("Node", columnTypeString, spec["nodeName"]),
			column("Attached", columnTypeBool, storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]),
			ageColumn(),
		},
		Row: typedRow("volumeattachments", func(va *storagev1.VolumeAttachment, now time.Time) ([]interface{}, error) {
			return []interface{}{
				va.Name, va.Spec.Attacher, derefOr(va.Spec.Source.PersistentVolumeName, ""), va.Spec.NodeName,
				va.Status.Attached, age(va.CreationTimestamp, now),
			}, nil
		}),
	}
}

// boolOr is *b, or fallback when b is unset.
func boolOr(b *bool, fallback bool) bool {
	if b == nil {
		return fallback
	}
	return *b
}
