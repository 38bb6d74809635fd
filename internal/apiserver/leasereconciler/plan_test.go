package leasereconciler

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestDesired(t *testing.T) {
	tests := []struct {
		name string
		ips  []string
		want []string
	}{
		{"none", nil, nil},
		{"sorted and de-duplicated", []string{"10.0.0.3", "10.0.0.1", "10.0.0.3"}, []string{"10.0.0.1", "10.0.0.3"}},
		{"loopback, unspecified, link-local and junk left out", []string{"127.0.0.2", "0.0.0.0", "169.254.1.1", "::1", "x", "10.0.0.1"}, []string{"10.0.0.1"}},
		{"IPv6 in canonical form", []string{"fd00:0::1"}, []string{"fd00::1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Desired(tt.ips); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIdentityLeaseName(t *testing.T) {
	a, b := IdentityLeaseName("node-a"), IdentityLeaseName("node-b")
	if a != IdentityLeaseName("node-a") || a == b {
		t.Fatalf("names not stable and distinct: %s %s", a, b)
	}
	if len(a) > 63 || a[:10] != "apiserver-" {
		t.Fatalf("bad lease name %q", a)
	}
}

func TestNeedsUpdate(t *testing.T) {
	two := []string{"10.0.0.1", "10.0.0.2"}
	tests := []struct {
		name        string
		current     []string
		currentPort int32
		want        []string
		update      bool
	}{
		{"equal", two, 6443, two, false},
		{"a server left", two, 6443, two[:1], true},
		{"a server came", two[:1], 6443, two, true},
		{"port changed", two, 7443, two, true},
		{"from nothing", nil, 6443, two, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EndpointsNeedUpdate(Endpoints(tt.current, tt.currentPort), Endpoints(tt.want, 6443)); got != tt.update {
				t.Errorf("endpoints: got %v, want %v", got, tt.update)
			}
			if got := SliceNeedsUpdate(EndpointSlice(tt.current, tt.currentPort), EndpointSlice(tt.want, 6443)); got != tt.update {
				t.Errorf("slice: got %v, want %v", got, tt.update)
			}
		})
	}
	// Labels others added and a missing skip-mirror label.
	ep := Endpoints(two, 6443)
	delete(ep.Labels, skipMirror)
	if !EndpointsNeedUpdate(ep, Endpoints(two, 6443)) {
		t.Error("a missing skip-mirror label must be restored")
	}
	s := EndpointSlice(two, 6443)
	s.Endpoints[0].Conditions.Ready = ptr.To(false)
	if !SliceNeedsUpdate(s, EndpointSlice(two, 6443)) {
		t.Error("an endpoint marked unready must be rewritten ready")
	}
	if got := Endpoints(nil, 6443); got.Subsets != nil {
		t.Errorf("no servers: subsets %v", got.Subsets)
	}
	if got := EndpointSlice([]string{"fd00::1"}, 6443); got.AddressType != "IPv6" {
		t.Errorf("address type %s", got.AddressType)
	}
	_ = corev1.ProtocolTCP
}

func TestExpiredIdentityLeases(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(name string, renewed time.Time, label string) coordinationv1.Lease {
		l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{IdentityLabel: label}, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(3600))}}
		if !renewed.IsZero() {
			l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(renewed))
		}
		return l
	}
	got := ExpiredIdentityLeases([]coordinationv1.Lease{
		lease("fresh", now.Add(-time.Minute), "kube-apiserver"),
		lease("gone", now.Add(-61*time.Minute), "kube-apiserver"),
		lease("never-renewed", time.Time{}, "kube-apiserver"),
		lease("other-kind", now.Add(-5*time.Hour), "something-else"),
	}, now)
	if want := []string{"gone", "never-renewed"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
