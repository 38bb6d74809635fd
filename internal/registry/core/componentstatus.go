package core

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Names of the components `kubectl get componentstatuses` reports, as Kubernetes names them.
const (
	ComponentScheduler         = "scheduler"
	ComponentControllerManager = "controller-manager"
	ComponentEtcd              = "etcd-0"
)

// msgComponentStatusReadOnly answers any attempt to write a computed component status.
const msgComponentStatusReadOnly = "componentstatuses are computed by the API server and cannot be written"

// ComponentHealth is one component's probe result: Err nil means healthy, with Message the
// probe's answer.
type ComponentHealth struct {
	Name    string
	Message string
	Err     error
}

// ComponentStatus builds the object Kubernetes reports for a probe: one Healthy condition, True
// with the probe's message, or False with the error.
func ComponentStatus(h ComponentHealth) *corev1.ComponentStatus {
	cond := corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: h.Message}
	if h.Err != nil {
		cond.Status, cond.Error = corev1.ConditionFalse, h.Err.Error()
	}
	return &corev1.ComponentStatus{
		TypeMeta:   metav1.TypeMeta{Kind: "ComponentStatus", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: h.Name},
		Conditions: []corev1.ComponentCondition{cond},
	}
}

// LeaderHealth judges a leader-elected component (scheduler, controller manager) by its Lease:
// skiff's components serve no healthz port of their own, and the one thing a healthy leader does
// for certain is renew its lease. readErr is the error reading the lease (a missing lease is
// unhealthy: no instance ever led).
func LeaderHealth(name string, lease *coordinationv1.Lease, readErr error, now time.Time) ComponentHealth {
	h := ComponentHealth{Name: name}
	switch {
	case readErr != nil:
		h.Err = fmt.Errorf("read leader lease: %w", readErr)
	case lease == nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "":
		h.Err = fmt.Errorf("no instance holds the leader lease")
	case lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil:
		h.Err = fmt.Errorf("leader lease held by %s was never renewed", *lease.Spec.HolderIdentity)
	default:
		expiry := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
		if !now.Before(expiry) {
			h.Err = fmt.Errorf("leader lease held by %s expired at %s", *lease.Spec.HolderIdentity, expiry.UTC().Format(time.RFC3339))
			break
		}
		h.Message = "ok"
	}
	return h
}

// newComponentStatusStrategy refuses every write: the resource serves only get and list, so this
// is a second line behind the verb check.
func newComponentStatusStrategy() *typedStrategy[*corev1.ComponentStatus] {
	readOnly := func(*corev1.ComponentStatus) field.ErrorList {
		return field.ErrorList{field.Forbidden(nil, msgComponentStatusReadOnly)}
	}
	return &typedStrategy[*corev1.ComponentStatus]{
		validate:       readOnly,
		validateUpdate: func(cs, _ *corev1.ComponentStatus) field.ErrorList { return readOnly(cs) },
	}
}
