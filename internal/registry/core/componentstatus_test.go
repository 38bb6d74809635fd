package core

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestLeaderHealth(t *testing.T) {
	now := time.Date(2025, time.June, 1, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewedAgo time.Duration) *coordinationv1.Lease {
		renew := metav1.NewMicroTime(now.Add(-renewedAgo))
		d := int32(15)
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renew, LeaseDurationSeconds: &d}}
	}
	tests := []struct {
		name    string
		lease   *coordinationv1.Lease
		err     error
		healthy bool
		errText string
	}{
		{"fresh", lease("cp-1_abc", 2*time.Second), nil, true, ""},
		{"expired", lease("cp-1_abc", time.Minute), nil, false, "leader lease held by cp-1_abc expired at 2025-06-01T11:59:15Z"},
		{"released", lease("", 0), nil, false, "no instance holds the leader lease"},
		{"missing", nil, errors.New("not found"), false, "read leader lease: not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := ComponentStatus(LeaderHealth(ComponentScheduler, tt.lease, tt.err, now))
			c := cs.Conditions[0]
			if cs.Name != "scheduler" || c.Type != corev1.ComponentHealthy {
				t.Fatalf("status = %+v", cs)
			}
			if tt.healthy != (c.Status == corev1.ConditionTrue) || c.Error != tt.errText {
				t.Fatalf("condition = %+v", c)
			}
			if tt.healthy && c.Message != "ok" {
				t.Fatalf("message = %q", c.Message)
			}
		})
	}
}

func TestComponentStatusResourceIsReadOnly(t *testing.T) {
	r := resourceByPlural(t, "componentstatuses")
	if len(r.Verbs) != 2 || r.Verbs[0] != "get" || r.Verbs[1] != "list" || r.Namespaced {
		t.Fatalf("resource = %+v", r)
	}
	cs := ComponentStatus(ComponentHealth{Name: ComponentEtcd, Message: "ok"})
	requireError(t, r.Strategy.Validate(context.Background(), cs), wantErr{"<nil>", field.ErrorTypeForbidden, "cannot be written"})
}
