package servicealloc_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/apiserver/store/servicealloc"
)

// fakeRanges is an in-memory servicealloc.ExtraRanges.
var _ servicealloc.ExtraRanges = (*fakeRanges)(nil)

// fakeRanges keeps ServiceCIDRs and IPAddresses in memory.
type fakeRanges struct {
	mu    sync.Mutex
	cidrs []*networkingv1.ServiceCIDR
	addrs map[string]*networkingv1.IPAddress
}

func newFakeRanges(cidrs ...*networkingv1.ServiceCIDR) *fakeRanges {
	return &fakeRanges{cidrs: cidrs, addrs: map[string]*networkingv1.IPAddress{}}
}

func (f *fakeRanges) ServiceCIDRs(context.Context) ([]*networkingv1.ServiceCIDR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*networkingv1.ServiceCIDR(nil), f.cidrs...), nil
}

func (f *fakeRanges) IPAddresses(context.Context) ([]*networkingv1.IPAddress, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*networkingv1.IPAddress
	for _, a := range f.addrs {
		out = append(out, a)
	}
	return out, nil
}

func (f *fakeRanges) CreateIPAddress(_ context.Context, ip *networkingv1.IPAddress, dryRun bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.addrs[ip.Name]; ok {
		return apierrors.NewAlreadyExists(schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}, ip.Name)
	}
	if !dryRun {
		f.addrs[ip.Name] = ip
	}
	return nil
}

func (f *fakeRanges) DeleteIPAddress(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.addrs, name)
	return nil
}

func (f *fakeRanges) held() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for name, a := range f.addrs {
		out[name] = a.Spec.ParentRef.Namespace + "/" + a.Spec.ParentRef.Name
	}
	return out
}

func serviceCIDR(name string, deleting bool, cidrs ...string) *networkingv1.ServiceCIDR {
	c := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
	if deleting {
		now := metav1.Now()
		c.DeletionTimestamp = &now
	}
	return c
}

// TestClusterIPsFromServiceCIDRs: beyond the own /29, a Service may ask for an address of a
// ServiceCIDR (recorded as an IPAddress naming it, refused when another holds it or when the range
// is being deleted), gets one of a ServiceCIDR once its own range is full, and gives the address
// back when it is deleted.
func TestClusterIPsFromServiceCIDRs(t *testing.T) {
	extra := newFakeRanges(serviceCIDR("kubernetes", false, "10.43.0.8/29"), serviceCIDR("more", false, "203.0.113.0/29"),
		serviceCIDR("leaving", true, "198.51.100.0/24"))
	st, _, scheme := servicesStoreWith(t, "10.43.0.8/29", extra)
	ctx := context.Background()
	create := func(name, ip string) (*corev1.Service, error) {
		svc := service(name, corev1.ServiceTypeClusterIP)
		svc.Spec.ClusterIP = ip
		scheme.Default(svc)
		out, err := st.Create(ctx, svc, store.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return out.(*corev1.Service), nil
	}

	asked, err := create("asked", "203.0.113.3")
	if err != nil {
		t.Fatalf("asking for an address of ServiceCIDR more: %v", err)
	}
	if asked.Spec.ClusterIP != "203.0.113.3" || len(asked.Spec.ClusterIPs) != 1 || asked.Spec.IPFamilies[0] != corev1.IPv4Protocol {
		t.Fatalf("asked got %v %v %v", asked.Spec.ClusterIP, asked.Spec.ClusterIPs, asked.Spec.IPFamilies)
	}
	if got := extra.held(); got["203.0.113.3"] != "default/asked" {
		t.Fatalf("IPAddresses %v, want 203.0.113.3 held by default/asked", got)
	}
	for _, c := range []struct{ ip, want string }{
		{"203.0.113.3", "provided IP is already allocated"},
		{"203.0.113.0", "is not in the valid range"},   // the range's network address
		{"203.0.113.7", "is not in the valid range"},   // its broadcast address
		{"198.51.100.10", "is not in the valid range"}, // a ServiceCIDR being deleted gives nothing new
		{"192.0.2.10", "is not in the valid range"},    // no ServiceCIDR at all
	} {
		if _, err := create("refused", c.ip); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("asking for %s = %v, want Invalid %q", c.ip, err, c.want)
		}
	}

	// Six addresses fill the own /29; the next ones come from ServiceCIDR more.
	for i := range 6 {
		if _, err := create(fmt.Sprintf("own%d", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	spill := map[string]bool{}
	for i := range 5 {
		svc, err := create(fmt.Sprintf("spill%d", i), "")
		if err != nil {
			t.Fatalf("service %d beyond the own range: %v", i, err)
		}
		ip := netip.MustParseAddr(svc.Spec.ClusterIP)
		if !netip.MustParsePrefix("203.0.113.0/29").Contains(ip) || ip.String() == "203.0.113.3" || spill[ip.String()] {
			t.Fatalf("service %d beyond the own range got %s (so far %v)", i, ip, spill)
		}
		spill[ip.String()] = true
	}
	if _, err := create("full", ""); err == nil || !strings.Contains(err.Error(), "range is full") {
		t.Fatalf("every range full = %v, want the range full", err)
	}

	if _, _, err := st.Delete(ctx, "default", "asked", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := extra.held(); got["203.0.113.3"] != "" || len(got) != 5 {
		t.Fatalf("after deleting asked the IPAddresses are %v, want its address back and the 5 others", got)
	}
	if _, err := create("again", "203.0.113.3"); err != nil {
		t.Fatalf("the address given back: %v", err)
	}
}
