package leader

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

func TestDecideRelease(t *testing.T) {
	for _, tc := range []struct {
		name   string
		read   bool
		holder string
		want   releaseDecision
	}{
		{"ours as last read", true, "a", releaseWrite},
		{"another's as last read", true, "b", releaseRefuse},
		{"nobody's as last read", true, "", releaseRefuse},
		{"never read", false, "", releaseRefuse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideRelease(tc.read, tc.holder, "a"); got != tc.want {
				t.Fatalf("decideRelease(%v, %q, a) = %v, want %v", tc.read, tc.holder, got, tc.want)
			}
		})
	}
}

// client-go's release reads the Lease and then writes a record without a holder if the record
// it observed before (not the one it just read) named it. A leader resumed after a pause, whose
// renewal ran out of time, still observed itself: the guard keeps it from releasing the Lease
// another candidate took meanwhile, and lets a holder release its own.
func TestReleaseGuardReleasesOnlyItsOwnLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := metav1.NewMicroTime(time.Now())
	for _, tc := range []struct {
		holder   string
		released bool
	}{
		{holder: "b", released: false},
		{holder: "a", released: true},
	} {
		client := fake.NewSimpleClientset(&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(tc.holder), LeaseDurationSeconds: ptr.To[int32](15),
				AcquireTime: &now, RenewTime: &now},
		})
		guard := &releaseGuard{Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager"},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "a"},
		}}
		if _, _, err := guard.Get(ctx); err != nil {
			t.Fatal(err)
		}
		err := guard.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1, RenewTime: metav1.Now(), AcquireTime: metav1.Now()})
		lease, gerr := client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(gerr)
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		switch {
		case tc.released && (err != nil || holder != ""):
			t.Fatalf("held by a: release = %v, holder now %q; want released", err, holder)
		case !tc.released && (!errors.Is(err, errNotOurs) || holder != tc.holder):
			t.Fatalf("held by %s: release = %v, holder now %q; want refused and unchanged", tc.holder, err, holder)
		}
	}
}
