package identitylease

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestLive(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	lease := func(renewed *time.Time) *coordinationv1.Lease {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{Label: Value}},
			// An hour, as upstream's identity Leases: the duration never decides liveness.
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(3600))},
		}
		if renewed != nil {
			l.Spec.RenewTime = &metav1.MicroTime{Time: *renewed}
		}
		return l
	}
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	for _, tc := range []struct {
		name    string
		renewed *time.Time
		live    bool
		ago     time.Duration
	}{
		{name: "just renewed", renewed: at(0), live: true},
		{name: "one renewal missed", renewed: at(-2 * RenewInterval), live: true, ago: 2 * RenewInterval},
		{name: "at the edge", renewed: at(-LiveWithin), live: true, ago: LiveWithin},
		{name: "killed 90 s ago, Lease unexpired for another hour", renewed: at(-90 * time.Second), live: false, ago: 90 * time.Second},
		{name: "renewal stamped ahead of this clock", renewed: at(5 * time.Second), live: true},
		{name: "never renewed", live: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lease(tc.renewed)
			if got := Live(l, now); got != tc.live {
				t.Errorf("Live = %v, want %v", got, tc.live)
			}
			ago, ok := RenewedAgo(l, now)
			if ok != (tc.renewed != nil) || ago != tc.ago {
				t.Errorf("RenewedAgo = %v, %v; want %v, %v", ago, ok, tc.ago, tc.renewed != nil)
			}
		})
	}
	if IsIdentity(&coordinationv1.Lease{}) || !IsIdentity(lease(nil)) {
		t.Error("IsIdentity: want only the labelled Lease")
	}
}
