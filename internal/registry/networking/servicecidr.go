package networking

import (
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// DefaultServiceCIDRName is the ServiceCIDR that holds the cluster's --service-cidr, as Kubernetes
// names it.
const DefaultServiceCIDRName = "kubernetes"

// addressResources are networking.k8s.io/v1 ServiceCIDR and IPAddress (GA in Kubernetes 1.33):
// stored and validated as Kubernetes does. skiff's service IP allocator keeps the --service-cidr
// range (the default ServiceCIDR) in its own bitmap and writes an IPAddress for each cluster IP it
// hands out from the other ServiceCIDRs (internal/apiserver/store/servicealloc).
func addressResources() []*registry.Resource {
	gv := networkingv1.SchemeGroupVersion
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "ServiceCIDR", ListKind: "ServiceCIDRList",
			Plural: "servicecidrs", Singular: "servicecidr",
			New:     func() runtime.Object { return &networkingv1.ServiceCIDR{} },
			NewList: func() runtime.Object { return &networkingv1.ServiceCIDRList{} },
			Strategy: &vu.Strategy[*networkingv1.ServiceCIDR]{
				APIVersion:  gv.String(),
				ClearStatus: func(c *networkingv1.ServiceCIDR) { c.Status = networkingv1.ServiceCIDRStatus{} },
				KeepStatus:  func(c, old *networkingv1.ServiceCIDR) { c.Status = old.Status },
				SpecEqual: func(c, old *networkingv1.ServiceCIDR) bool {
					return apiequality.Semantic.DeepEqual(c.Spec, old.Spec)
				},
				ValidateObject: func(c *networkingv1.ServiceCIDR) field.ErrorList {
					return ValidateServiceCIDRSpec(&c.Spec, field.NewPath("spec"))
				},
				ValidateChange:      ValidateServiceCIDRChange,
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*networkingv1.ServiceCIDR]{
				APIVersion: gv.String(),
				Metadata:   vu.StatusResetsMetadata,
				KeepSpec:   func(c, old *networkingv1.ServiceCIDR) { c.Spec = old.Spec },
				ValidateStatus: func(c, _ *networkingv1.ServiceCIDR) field.ErrorList {
					return metav1validation.ValidateConditions(c.Status.Conditions, field.NewPath("status", "conditions"))
				},
			},
		},
		{
			GroupVersion: gv, Kind: "IPAddress", ListKind: "IPAddressList",
			Plural: "ipaddresses", Singular: "ipaddress", ShortNames: []string{"ip"},
			New:     func() runtime.Object { return &networkingv1.IPAddress{} },
			NewList: func() runtime.Object { return &networkingv1.IPAddressList{} },
			Strategy: &vu.Strategy[*networkingv1.IPAddress]{
				NameFn: ValidateIPAddressName,
				ValidateObject: func(ip *networkingv1.IPAddress) field.ErrorList {
					return validateIPAddressParentRef(ip.Spec.ParentRef, field.NewPath("spec", "parentRef"))
				},
				ValidateChange: func(ip, old *networkingv1.IPAddress) field.ErrorList {
					if !apiequality.Semantic.DeepEqual(ip.Spec.ParentRef, old.Spec.ParentRef) {
						return field.ErrorList{field.Invalid(field.NewPath("spec", "parentRef"), ip.Spec.ParentRef, "field is immutable")}
					}
					return nil
				},
				UnconditionalUpdate: true,
			},
		},
	}
}

// ValidateIPAddressName accepts an IP address in its canonical form (the name is the address, so
// one address has one object).
func ValidateIPAddressName(name string, _ bool) []string {
	ip, err := netip.ParseAddr(name)
	if err != nil {
		return []string{"must be a valid IP address"}
	}
	if ip.Zone() != "" {
		return []string{"must not have a zone"}
	}
	if ip.String() != name {
		return []string{"must be in canonical form (" + ip.String() + ")"}
	}
	return nil
}

func validateIPAddressParentRef(ref *networkingv1.ParentReference, fld *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(fld, "")}
	}
	var errs field.ErrorList
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(fld.Child("group"), ref.Group, msg))
		}
	}
	if ref.Resource == "" {
		errs = append(errs, field.Required(fld.Child("resource"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(ref.Resource) {
			errs = append(errs, field.Invalid(fld.Child("resource"), ref.Resource, msg))
		}
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
			errs = append(errs, field.Invalid(fld.Child("name"), ref.Name, msg))
		}
	}
	if ref.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(ref.Namespace) {
			errs = append(errs, field.Invalid(fld.Child("namespace"), ref.Namespace, msg))
		}
	}
	return errs
}

// ValidateServiceCIDRSpec checks one or two CIDRs in canonical form, of different IP families.
func ValidateServiceCIDRSpec(spec *networkingv1.ServiceCIDRSpec, fld *field.Path) field.ErrorList {
	cidrs := fld.Child("cidrs")
	switch n := len(spec.CIDRs); {
	case n == 0:
		return field.ErrorList{field.Required(cidrs, "at least one CIDR required")}
	case n > 2:
		return field.ErrorList{field.TooMany(cidrs, n, 2)}
	}
	var errs field.ErrorList
	var prefixes []netip.Prefix
	for i, c := range spec.CIDRs {
		p, err := netip.ParsePrefix(c)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(cidrs.Index(i), c, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
		case p.Masked() != p || p.String() != c:
			errs = append(errs, field.Invalid(cidrs.Index(i), c, "must be in canonical form ("+p.Masked().String()+")"))
		default:
			prefixes = append(prefixes, p)
		}
	}
	if len(prefixes) == 2 && prefixes[0].Addr().Is4() == prefixes[1].Addr().Is4() {
		errs = append(errs, field.Invalid(cidrs, spec.CIDRs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
	}
	return errs
}

// ValidateServiceCIDRChange keeps the CIDRs, except that a single-stack ServiceCIDR may gain a
// second family (the way a cluster becomes dual-stack), as Kubernetes allows.
func ValidateServiceCIDRChange(c, old *networkingv1.ServiceCIDR) field.ErrorList {
	cur, prev := c.Spec.CIDRs, old.Spec.CIDRs
	if apiequality.Semantic.DeepEqual(cur, prev) {
		return nil
	}
	if len(prev) == 1 && len(cur) == 2 && cur[0] == prev[0] {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "cidrs"), cur, "field is immutable")}
}
