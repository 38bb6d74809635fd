package flowcontrol

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func limited(name string, shares int32, lr flowcontrolv1.LimitResponse) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type:    flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To(shares), LimitResponse: lr},
		},
	}
}

func exemptLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt},
	}
}

func queuing(queues, hand, length int32) flowcontrolv1.LimitResponse {
	return flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
		Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: length}}
}

var reject = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}

func TestPlanLevels(t *testing.T) {
	// Kubernetes' default shares (exempt 0): 30+10+40+100+20+5 = 205.
	levels := []*flowcontrolv1.PriorityLevelConfiguration{
		exemptLevel("exempt"),
		limited("system", 30, queuing(64, 6, 50)),
		limited("leader-election", 10, queuing(16, 4, 50)),
		limited("workload-high", 40, queuing(128, 6, 50)),
		limited("workload-low", 100, queuing(128, 6, 50)),
		limited("global-default", 20, queuing(128, 6, 50)),
		limited("catch-all", 5, queuing(0, 0, 0)),
		limited("rejecting", 0, reject),
	}
	plans := PlanLevels(levels, 600)
	for _, tc := range []struct {
		name  string
		limit int
	}{
		// ceil(600 * shares / 205)
		{"system", 88}, {"leader-election", 30}, {"workload-high", 118}, {"workload-low", 293},
		{"global-default", 59}, {"catch-all", 15}, {"rejecting", 1},
	} {
		if got := plans[tc.name].QueueSet.Limit; got != tc.limit {
			t.Errorf("%s: limit %d, want %d", tc.name, got, tc.limit)
		}
	}
	if !plans["exempt"].Exempt || plans["system"].Exempt {
		t.Errorf("exempt flags wrong: %+v", plans)
	}
	if q := plans["catch-all"].QueueSet; q.Queues != defaultQueues || q.HandSize != defaultHandSize || q.QueueLengthLimit != defaultQueueLengthLimit {
		t.Errorf("unset queuing: %+v, want the defaults", q)
	}
	if q := plans["rejecting"].QueueSet; q.Queues != 0 {
		t.Errorf("Reject level has queues: %+v", q)
	}
	if plans["system"].UID != "uid-system" {
		t.Errorf("UID %q", plans["system"].UID)
	}
}

func TestListSeats(t *testing.T) {
	for _, tc := range []struct {
		objects, limit int64
		filtered       bool
		want           int
	}{
		{0, 0, false, 1}, {99, 0, false, 1}, {101, 0, false, 2}, {950, 0, false, 10}, {20000, 0, false, 10},
		{20000, 500, false, 5}, {20000, 500, true, 10}, {300, 1000, false, 3},
	} {
		if got := ListSeats(tc.objects, tc.limit, tc.filtered); got != tc.want {
			t.Errorf("ListSeats(%d, %d, %v) = %d, want %d", tc.objects, tc.limit, tc.filtered, got, tc.want)
		}
	}
}
