package printers

import (
	"time"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
)

func runtimeClassPrinter() *registry.TablePrinter {
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			// Kubernetes looks the description up in ObjectMeta's docs, where there is none: it is empty.
			column("Handler", columnTypeString, objectMetaDoc("handler")),
			ageColumn(),
		},
		Row: typedRow("runtimeclasses", func(rc *nodev1.RuntimeClass, now time.Time) ([]interface{}, error) {
			return []interface{}{rc.Name, rc.Handler, age(rc.CreationTimestamp, now)}, nil
		}),
	}
}
