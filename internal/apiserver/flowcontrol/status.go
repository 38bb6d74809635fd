package flowcontrol

import (
	"context"
	"fmt"
	"sort"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatusWriter writes a FlowSchema's status (through the flowschemas/status subresource, with the
// schema's resourceVersion as the precondition).
type StatusWriter func(ctx context.Context, fs *flowcontrolv1.FlowSchema) error

// DanglingStatus plans the FlowSchema status writes the configuration calls for: each schema
// whose Dangling condition does not already say whether the priority level it names exists gets a
// copy with the condition it should have (True, NotFound when the level is missing; False, Found
// when it exists), the transition time now. A condition that already says the same (status,
// reason and message) is left alone, so every API server of a cluster writes a schema at most
// once per change of its level's existence. The copies come sorted by name.
func DanglingStatus(levels []*flowcontrolv1.PriorityLevelConfiguration, schemas []*flowcontrolv1.FlowSchema, now time.Time) []*flowcontrolv1.FlowSchema {
	exists := make(map[string]bool, len(levels))
	for _, pl := range levels {
		exists[pl.Name] = true
	}
	var out []*flowcontrolv1.FlowSchema
	for _, fs := range schemas {
		want := danglingCondition(fs.Spec.PriorityLevelConfiguration.Name, exists[fs.Spec.PriorityLevelConfiguration.Name])
		i := conditionIndex(fs.Status.Conditions, flowcontrolv1.FlowSchemaConditionDangling)
		if i >= 0 {
			have := fs.Status.Conditions[i]
			if have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
				continue
			}
		}
		want.LastTransitionTime = metav1.NewTime(now)
		next := fs.DeepCopy()
		if i >= 0 {
			next.Status.Conditions[i] = want
		} else {
			next.Status.Conditions = append(next.Status.Conditions, want)
		}
		out = append(out, next)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// danglingCondition is the Dangling condition of a schema naming the priority level level, in
// Kubernetes' words.
func danglingCondition(level string, exists bool) flowcontrolv1.FlowSchemaCondition {
	if !exists {
		return flowcontrolv1.FlowSchemaCondition{
			Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue, Reason: "NotFound",
			Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", level),
		}
	}
	return flowcontrolv1.FlowSchemaCondition{
		Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found",
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", level),
	}
}

func conditionIndex(conds []flowcontrolv1.FlowSchemaCondition, t flowcontrolv1.FlowSchemaConditionType) int {
	for i, c := range conds {
		if c.Type == t {
			return i
		}
	}
	return -1
}
