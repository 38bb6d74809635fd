package identitylease

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

const (
	// Label marks an API server identity Lease, with the value Value, as upstream does.
	Label = "apiserver.kubernetes.io/identity"
	Value = "kube-apiserver"
	// RenewInterval is how often an API server renews its identity Lease
	// (internal/apiserver/leasereconciler's default, upstream's too).
	RenewInterval = 10 * time.Second
	// LiveWithin is how recently a Lease must have been renewed for its server to count as alive:
	// three renewals, so that one slow or lost write under load does not declare a server dead.
	LiveWithin = 3 * RenewInterval
)

// IsIdentity says whether l is an API server identity Lease.
func IsIdentity(l *coordinationv1.Lease) bool {
	return l.Labels[Label] == Value
}

// RenewedAgo is how long before now l was last renewed; ok is false when it never was.
// A renewal stamped after now (another host's clock ahead of this one) counts as just now.
func RenewedAgo(l *coordinationv1.Lease, now time.Time) (ago time.Duration, ok bool) {
	if l.Spec.RenewTime == nil {
		return 0, false
	}
	return max(now.Sub(l.Spec.RenewTime.Time), 0), true
}

// Live says whether the API server holding l renewed it within LiveWithin of now.
func Live(l *coordinationv1.Lease, now time.Time) bool {
	ago, ok := RenewedAgo(l, now)
	return ok && ago <= LiveWithin
}
