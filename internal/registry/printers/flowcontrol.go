package printers

import (
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/registry"
)

func flowcontrolPrinter(resource string) *registry.TablePrinter {
	switch resource {
	case "flowschemas":
		return flowSchemaPrinter()
	case "prioritylevelconfigurations":
		return priorityLevelPrinter()
	}
	return nil
}

func flowSchemaPrinter() *registry.TablePrinter {
	spec := flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("PriorityLevel", columnTypeString, flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]),
			// Kubernetes declares the precedence a string column and fills it with an integer.
			column("MatchingPrecedence", columnTypeString, spec["matchingPrecedence"]),
			column("DistinguisherMethod", columnTypeString, spec["distinguisherMethod"]),
			ageColumn(),
			column("MissingPL", columnTypeString, "references a broken or non-existent PriorityLevelConfiguration"),
		},
		Row: typedRow("flowschemas", func(fs *flowcontrolv1.FlowSchema, now time.Time) ([]interface{}, error) {
			method := noneCell
			if fs.Spec.DistinguisherMethod != nil {
				method = string(fs.Spec.DistinguisherMethod.Type)
			}
			// "?" until the flow-control controller reports whether the level exists.
			missing := "?"
			for _, c := range fs.Status.Conditions {
				if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
					missing = string(c.Status)
					break
				}
			}
			return []interface{}{
				fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method,
				age(fs.CreationTimestamp, now), missing,
			}, nil
		}),
	}
}

func priorityLevelPrinter() *registry.TablePrinter {
	queuing := flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()
	return &registry.TablePrinter{
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Type", columnTypeString, flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]),
			column("NominalConcurrencyShares", columnTypeString, flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]),
			column("Queues", columnTypeString, queuing["queues"]),
			column("HandSize", columnTypeString, queuing["handSize"]),
			column("QueueLengthLimit", columnTypeString, queuing["queueLengthLimit"]),
			ageColumn(),
		},
		Row: typedRow("prioritylevelconfigurations", func(pl *flowcontrolv1.PriorityLevelConfiguration, now time.Time) ([]interface{}, error) {
			// Integers where the level has them, "<none>" where it has not (exempt levels, rejecting levels).
			var shares, queues, handSize, queueLength interface{} = noneCell, noneCell, noneCell, noneCell
			if l := pl.Spec.Limited; l != nil {
				if l.NominalConcurrencyShares != nil {
					shares = int64(*l.NominalConcurrencyShares)
				}
				if q := l.LimitResponse.Queuing; q != nil {
					queues, handSize, queueLength = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
				}
			}
			return []interface{}{pl.Name, string(pl.Spec.Type), shares, queues, handSize, queueLength, age(pl.CreationTimestamp, now)}, nil
		}),
	}
}
