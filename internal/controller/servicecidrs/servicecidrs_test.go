package servicecidrs

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

var epoch = ctrltest.Epoch()

// cidr is a ServiceCIDR; deletedAgo < 0: not being deleted.
func cidr(name string, deletedAgo time.Duration, finalizers []string, ready *metav1.Condition, prefixes ...string) *networkingv1.ServiceCIDR {
	sc := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers, ResourceVersion: "3"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: prefixes}}
	if deletedAgo >= 0 {
		t := metav1.NewTime(epoch.Add(-deletedAgo))
		sc.DeletionTimestamp = &t
	}
	if ready != nil {
		sc.Status.Conditions = []metav1.Condition{*ready}
	}
	return sc
}

var (
	ready       = &metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: readyReason, Message: readyMessage}
	terminating = &metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Terminating", Message: terminatingMessage}
	fin         = []string{Finalizer}
	live        = time.Duration(-1)
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, v := range s {
		out = append(out, netip.MustParseAddr(v))
	}
	return out
}

func TestDecide(t *testing.T) {
	other := cidr("other", live, fin, ready, "203.0.113.0/25")
	otherLeaving := cidr("other", time.Second, fin, ready, "203.0.113.0/25")
	tests := []struct {
		name   string
		cidr   *networkingv1.ServiceCIDR
		others []*networkingv1.ServiceCIDR
		held   []netip.Addr
		want   Plan
	}{
		{name: "new: finalizer and Ready", cidr: cidr("a", live, nil, nil, "203.0.113.0/24"),
			want: Plan{AddFinalizer: true, Ready: ready}},
		{name: "live and ready: nothing", cidr: cidr("a", live, fin, ready, "203.0.113.0/24")},
		{name: "live, Ready lost (was terminating before a re-create): Ready again", cidr: cidr("a", live, fin, terminating, "203.0.113.0/24"),
			want: Plan{Ready: ready}},
		{name: "deleting, an address only it covers is held: Terminating", cidr: cidr("a", time.Minute, fin, ready, "203.0.113.0/24"),
			held: addrs("203.0.113.200"), want: Plan{Ready: terminating}},
		{name: "deleting, already says Terminating: nothing", cidr: cidr("a", time.Minute, fin, terminating, "203.0.113.0/24"),
			held: addrs("203.0.113.200")},
		{name: "deleting, the held address is another live range's too: finalizer off", cidr: cidr("a", time.Minute, fin, ready, "203.0.113.0/24"),
			others: []*networkingv1.ServiceCIDR{other}, held: addrs("203.0.113.10", "10.43.0.5"), want: Plan{RemoveFinalizer: true}},
		{name: "deleting, the other range covering it is being deleted too: Terminating", cidr: cidr("a", time.Minute, fin, ready, "203.0.113.0/24"),
			others: []*networkingv1.ServiceCIDR{otherLeaving}, held: addrs("203.0.113.10"), want: Plan{Ready: terminating}},
		{name: "deleting, nothing held, within the grace period: look again when it ends", cidr: cidr("a", 4*time.Second, fin, ready, "203.0.113.0/24"),
			held: addrs("10.43.0.5"), want: Plan{RequeueAfter: DeletionGracePeriod - 4*time.Second}},
		{name: "deleting without the finalizer: nothing", cidr: cidr("a", time.Minute, nil, ready, "203.0.113.0/24"), held: addrs("203.0.113.200")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.cidr, append(tt.others, tt.cidr), tt.held, epoch)
			if got.AddFinalizer != tt.want.AddFinalizer || got.RemoveFinalizer != tt.want.RemoveFinalizer || got.RequeueAfter != tt.want.RequeueAfter {
				t.Errorf("Decide = %+v, want %+v", got, tt.want)
			}
			if (got.Ready == nil) != (tt.want.Ready == nil) ||
				(got.Ready != nil && (got.Ready.Status != tt.want.Ready.Status || got.Ready.Reason != tt.want.Ready.Reason || got.Ready.Message != tt.want.Ready.Message)) {
				t.Errorf("Ready = %+v, want %+v", got.Ready, tt.want.Ready)
			}
		})
	}
}

func TestClusterIPsOf(t *testing.T) {
	for _, tt := range []struct {
		spec corev1.ServiceSpec
		want []string
	}{
		{corev1.ServiceSpec{ClusterIP: "10.43.0.5", ClusterIPs: []string{"10.43.0.5", "fd00::5"}}, []string{"10.43.0.5", "fd00::5"}},
		{corev1.ServiceSpec{ClusterIP: "10.43.0.5"}, []string{"10.43.0.5"}},
		{corev1.ServiceSpec{ClusterIP: "None", ClusterIPs: []string{"None"}}, []string{}},
		{corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}, nil},
	} {
		if got := ClusterIPsOf(&corev1.Service{Spec: tt.spec}); !slices.Equal(got, tt.want) {
			t.Errorf("ClusterIPsOf(%+v) = %q, want %q", tt.spec, got, tt.want)
		}
	}
}

// TestSync drives the controller on a fake clientset: a new ServiceCIDR gets the finalizer and
// then Ready; one being deleted whose address a Service holds gets Terminating; once the Service
// is gone and the grace period has passed, the finalizer comes off.
func TestSync(t *testing.T) {
	fresh := cidr("more", live, nil, nil, "203.0.113.0/24")
	env := ctrltest.NewEnv(fresh)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Networking().V1().ServiceCIDRs().Informer(), fresh)
	if err := c.Sync(context.Background(), "more"); err != nil {
		t.Fatal(err)
	}
	writes := env.Writes()
	if got := ctrltest.Describe(writes); !slices.Equal(got, []string{"update servicecidrs more", "update servicecidrs/status more"}) {
		t.Fatalf("writes %q", got)
	}
	status := writes[1].(clienttesting.UpdateAction).GetObject().(*networkingv1.ServiceCIDR)
	if !slices.Contains(status.Finalizers, Finalizer) || len(status.Status.Conditions) != 1 || status.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Fatalf("written %+v %+v", status.Finalizers, status.Status.Conditions)
	}

	leaving := cidr("more", 2*time.Second, fin, ready, "203.0.113.0/24")
	holder := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: "203.0.113.10", ClusterIPs: []string{"203.0.113.10"}}}
	env = ctrltest.NewEnv([]runtime.Object{leaving, holder}...)
	if c, err = New(env.Deps); err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Networking().V1().ServiceCIDRs().Informer(), leaving)
	ctrltest.Seed(t, env.Factory.Core().V1().Services().Informer(), holder)
	if err := c.Sync(context.Background(), "more"); err != nil {
		t.Fatal(err)
	}
	writes = env.Writes()
	if got := ctrltest.Describe(writes); !slices.Equal(got, []string{"update servicecidrs/status more"}) {
		t.Fatalf("writes %q, want the Terminating status", got)
	}
	if conds := writes[0].(clienttesting.UpdateAction).GetObject().(*networkingv1.ServiceCIDR).Status.Conditions; conds[0].Reason != "Terminating" {
		t.Fatalf("conditions %+v", conds)
	}

	if err := env.Factory.Core().V1().Services().Informer().GetIndexer().Delete(holder); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(context.Background(), "more"); err != nil {
		t.Fatal(err)
	}
	if got := env.Writes(); len(got) != 0 {
		t.Fatalf("writes %q within the grace period, want none", ctrltest.Describe(got))
	}
	env.Clock.Step(DeletionGracePeriod)
	if err := c.Sync(context.Background(), "more"); err != nil {
		t.Fatal(err)
	}
	ctrltest.FinalizerUpdate(t, env.Writes(), "update servicecidrs more", []string{})
}
