package proxy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExtraServiceCIDRs(t *testing.T) {
	now := metav1.Now()
	cidrs := []*networkingv1.ServiceCIDR{
		{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/24"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "more"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"203.0.113.7/24", "2001:db8::/64"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "inside"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.128/25"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "leaving", DeletionTimestamp: &now}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"198.51.100.0/24"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "twin"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"203.0.113.0/24"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "wider"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/16"}}},
	}
	var got []string
	for _, p := range ExtraServiceCIDRs(cidrs, netipPrefix("10.96.0.0/24")) {
		got = append(got, p.String())
	}
	// The service range and what lies inside it are refused already; a wider range is not; IPv6
	// is not proxied; one being deleted still serves its cluster IPs until it goes.
	want := []string{"10.96.0.0/16", "198.51.100.0/24", "203.0.113.0/24"}
	if !slices.Equal(got, want) {
		t.Fatalf("ExtraServiceCIDRs = %q, want %q", got, want)
	}
}

// TestExtraServiceCIDRsRefused: both backends refuse untranslated traffic to every ServiceCIDR,
// after the service range's own rule.
func TestExtraServiceCIDRsRefused(t *testing.T) {
	cfg := testConfig()
	cfg.ExtraServiceCIDRs = []netip.Prefix{netipPrefix("203.0.113.0/24")}
	filter := Build(cfg, nil, nil).Filter[cfg.filterChain()]
	want := []string{
		`-d 10.96.0.0/24 -m comment --comment "service range without rules" -j REJECT --reject-with icmp-port-unreachable`,
		`-d 203.0.113.0/24 -m comment --comment "service range without rules" -j REJECT --reject-with icmp-port-unreachable`,
	}
	if !slices.Equal(filter[len(filter)-2:], want) {
		t.Errorf("iptables filter chain %q, want it to end with %q", filter, want)
	}
	var rejects []string
	for _, r := range BuildNft(cfg, nil, nil).Chains[nftSvcFilter] {
		if strings.Contains(r, "service range without rules") {
			rejects = append(rejects, r)
		}
	}
	wantNft := []string{
		`ip daddr 10.96.0.0/24 reject with icmp type port-unreachable comment "service range without rules"`,
		`ip daddr 203.0.113.0/24 reject with icmp type port-unreachable comment "service range without rules"`,
	}
	if !slices.Equal(rejects, wantNft) {
		t.Errorf("nftables rejects %q, want %q", rejects, wantNft)
	}
}
