package networking

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

func TestValidateIPAddressName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"10.0.0.1", true}, {"255.255.255.255", true}, {"fe80::42:1dff:fe84:f9e2", true}, {"2001:db8::1", true},
		{"010.0.0.1", false}, {"2001:DB8::1", false}, {"2001:db8:0::1", false}, {"fe80::1%eth0", false},
		{"10.0.0.0/8", false}, {"web", false}, {"", false},
	} {
		if errs := ValidateIPAddressName(tc.name, false); (len(errs) == 0) != tc.ok {
			t.Errorf("ValidateIPAddressName(%q) = %v, want ok=%v", tc.name, errs, tc.ok)
		}
	}
}

func TestValidateIPAddressParentRef(t *testing.T) {
	good := &networkingv1.ParentReference{Group: "mygroup", Resource: "myresources", Namespace: "foo", Name: "bar"}
	if errs := validateIPAddressParentRef(good, nil); len(errs) != 0 {
		t.Errorf("conformance's parentRef refused: %v", errs)
	}
	for _, bad := range []*networkingv1.ParentReference{
		nil,
		{Resource: "services"},
		{Name: "web"},
		{Resource: "Services", Name: "web"},
		{Resource: "services", Name: "web", Namespace: "Not_A_Label"},
	} {
		if errs := validateIPAddressParentRef(bad, nil); len(errs) == 0 {
			t.Errorf("parentRef %+v accepted", bad)
		}
	}
}

func TestValidateServiceCIDR(t *testing.T) {
	for _, tc := range []struct {
		cidrs []string
		ok    bool
	}{
		{[]string{"10.43.0.0/16"}, true},
		{[]string{"10.43.0.0/16", "fd00:43::/112"}, true},
		{nil, false},
		{[]string{"10.43.0.1/16"}, false}, // not canonical
		{[]string{"10.43.0.0/16", "10.44.0.0/16"}, false},
		{[]string{"a", "b", "c"}, false},
		{[]string{"bogus"}, false},
	} {
		errs := ValidateServiceCIDRSpec(&networkingv1.ServiceCIDRSpec{CIDRs: tc.cidrs}, nil)
		if (len(errs) == 0) != tc.ok {
			t.Errorf("cidrs %v: %v, want ok=%v", tc.cidrs, errs, tc.ok)
		}
	}
	cidr := func(c ...string) *networkingv1.ServiceCIDR {
		return &networkingv1.ServiceCIDR{Spec: networkingv1.ServiceCIDRSpec{CIDRs: c}}
	}
	if errs := ValidateServiceCIDRChange(cidr("10.43.0.0/16", "fd00::/112"), cidr("10.43.0.0/16")); len(errs) != 0 {
		t.Errorf("adding a second family refused: %v", errs)
	}
	if errs := ValidateServiceCIDRChange(cidr("10.44.0.0/16"), cidr("10.43.0.0/16")); len(errs) == 0 {
		t.Error("changing the CIDR accepted")
	}
	if errs := ValidateServiceCIDRChange(cidr("10.43.0.0/16"), cidr("10.43.0.0/16", "fd00::/112")); len(errs) == 0 {
		t.Error("dropping a family accepted")
	}
}
