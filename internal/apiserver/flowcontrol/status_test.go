package flowcontrol

import (
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func schemaNaming(name, level string, conds ...flowcontrolv1.FlowSchemaCondition) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7"},
		Spec:       flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level}},
		Status:     flowcontrolv1.FlowSchemaStatus{Conditions: conds},
	}
}

func TestDanglingStatus(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	found := danglingCondition("workload-low", true)
	found.LastTransitionTime = then
	missing := danglingCondition("gone", false)
	missing.LastTransitionTime = then
	other := flowcontrolv1.FlowSchemaCondition{Type: "Custom", Status: flowcontrolv1.ConditionTrue}
	levels := []*flowcontrolv1.PriorityLevelConfiguration{limited("workload-low", 100, reject), exemptLevel("exempt")}

	cases := []struct {
		name   string
		schema *flowcontrolv1.FlowSchema
		want   *flowcontrolv1.FlowSchemaCondition // nil: no write
	}{
		{"new schema, level exists", schemaNaming("a", "workload-low"),
			&flowcontrolv1.FlowSchemaCondition{Status: flowcontrolv1.ConditionFalse, Reason: "Found",
				Message: `This FlowSchema references the PriorityLevelConfiguration object named "workload-low" and it exists`}},
		{"new schema, level missing", schemaNaming("b", "nope"),
			&flowcontrolv1.FlowSchemaCondition{Status: flowcontrolv1.ConditionTrue, Reason: "NotFound",
				Message: `This FlowSchema references the PriorityLevelConfiguration object named "nope" but there is no such object`}},
		{"already says found", schemaNaming("c", "workload-low", found), nil},
		{"already says missing", schemaNaming("d", "gone", missing), nil},
		{"level came back", schemaNaming("e", "workload-low", other, flowcontrolv1.FlowSchemaCondition{
			Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue, Reason: "NotFound",
			Message:            `This FlowSchema references the PriorityLevelConfiguration object named "workload-low" but there is no such object`,
			LastTransitionTime: then}),
			&flowcontrolv1.FlowSchemaCondition{Status: flowcontrolv1.ConditionFalse, Reason: "Found",
				Message: `This FlowSchema references the PriorityLevelConfiguration object named "workload-low" and it exists`}},
		{"pointed at another level", schemaNaming("f", "exempt", found),
			&flowcontrolv1.FlowSchemaCondition{Status: flowcontrolv1.ConditionFalse, Reason: "Found",
				Message: `This FlowSchema references the PriorityLevelConfiguration object named "exempt" and it exists`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.schema.DeepCopy()
			got := DanglingStatus(levels, []*flowcontrolv1.FlowSchema{c.schema}, now)
			if c.want == nil {
				if len(got) != 0 {
					t.Fatalf("wrote %+v, want no write", got[0].Status)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d writes, want 1", len(got))
			}
			if got[0].ResourceVersion != "7" {
				t.Errorf("resourceVersion %q: the write must carry the schema's own as its precondition", got[0].ResourceVersion)
			}
			var dangling []flowcontrolv1.FlowSchemaCondition
			for _, cond := range got[0].Status.Conditions {
				if cond.Type == flowcontrolv1.FlowSchemaConditionDangling {
					dangling = append(dangling, cond)
				}
			}
			if len(dangling) != 1 {
				t.Fatalf("Dangling conditions %+v, want exactly one", dangling)
			}
			d := dangling[0]
			if d.Status != c.want.Status || d.Reason != c.want.Reason || d.Message != c.want.Message || !d.LastTransitionTime.Time.Equal(now) {
				t.Errorf("Dangling %+v, want %+v at %v", d, *c.want, now)
			}
			if len(got[0].Status.Conditions) != len(before.Status.Conditions) && len(before.Status.Conditions) != 0 {
				t.Errorf("conditions %+v: others must be kept", got[0].Status.Conditions)
			}
			if len(c.schema.Status.Conditions) != len(before.Status.Conditions) ||
				(len(before.Status.Conditions) > 0 && c.schema.Status.Conditions[len(before.Status.Conditions)-1] != before.Status.Conditions[len(before.Status.Conditions)-1]) {
				t.Errorf("the informer's object was changed: %+v", c.schema.Status)
			}
		})
	}
}
