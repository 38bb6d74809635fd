package discovery

import (
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Limits Kubernetes sets on one EndpointSlice.
const (
	maxAddresses      = 100
	maxPorts          = 20000
	maxEndpoints      = 1000
	maxTopologyLabels = 16
	maxHints          = 8
)

var (
	addressTypes   = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
	portProtocols  = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}
	addressTypeFld = field.NewPath("addressType")
)

// Resources returns the discovery.k8s.io/v1 resources.
func Resources() []*registry.Resource {
	return []*registry.Resource{{
		GroupVersion: discoveryv1.SchemeGroupVersion, Kind: "EndpointSlice", ListKind: "EndpointSliceList",
		Plural: "endpointslices", Singular: "endpointslice", Namespaced: true,
		New:     func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Strategy: &vu.Strategy[*discoveryv1.EndpointSlice]{
			Namespaced: true,
			// Everything outside metadata is the slice's "spec": any change bumps generation.
			SpecEqual: func(s, old *discoveryv1.EndpointSlice) bool {
				return s.AddressType == old.AddressType && apiequality.Semantic.DeepEqual(s.Endpoints, old.Endpoints) &&
					apiequality.Semantic.DeepEqual(s.Ports, old.Ports)
			},
			ValidateObject: ValidateEndpointSlice,
			ValidateChange: func(s, old *discoveryv1.EndpointSlice) field.ErrorList {
				return vu.Immutable(s.AddressType, old.AddressType, addressTypeFld)
			},
			UnconditionalUpdate: true,
		},
	}}
}

// RegisterDefaults registers the port defaults (name "" and protocol TCP) on s.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register discovery.k8s.io/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&discoveryv1.EndpointSlice{}, func(o any) { DefaultEndpointSlice(o.(*discoveryv1.EndpointSlice)) })
	s.AddTypeDefaultingFunc(&discoveryv1.EndpointSliceList{}, func(o any) {
		l := o.(*discoveryv1.EndpointSliceList)
		for i := range l.Items {
			DefaultEndpointSlice(&l.Items[i])
		}
	})
	return nil
}

// DefaultEndpointSlice gives each port an empty name and TCP when unset.
func DefaultEndpointSlice(s *discoveryv1.EndpointSlice) {
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			name := ""
			p.Name = &name
		}
		if p.Protocol == nil {
			proto := corev1.ProtocolTCP
			p.Protocol = &proto
		}
	}
}

// ValidateEndpointSlice checks the address type, the endpoints and the ports.
func ValidateEndpointSlice(s *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	switch s.AddressType {
	case "":
		errs = append(errs, field.Required(addressTypeFld, ""))
	case discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
	default:
		errs = append(errs, field.NotSupported(addressTypeFld, s.AddressType, addressTypes))
	}
	errs = append(errs, validateEndpoints(s.Endpoints, s.AddressType, field.NewPath("endpoints"))...)
	return append(errs, validatePorts(s.Ports, field.NewPath("ports"))...)
}

func validateEndpoints(endpoints []discoveryv1.Endpoint, addrType discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	if len(endpoints) > maxEndpoints {
		return field.ErrorList{field.TooMany(fldPath, len(endpoints), maxEndpoints)}
	}
	var errs field.ErrorList
	for i, ep := range endpoints {
		idx := fldPath.Index(i)
		addrPath := idx.Child("addresses")
		if len(ep.Addresses) == 0 {
			errs = append(errs, field.Required(addrPath, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxAddresses {
			errs = append(errs, field.TooMany(addrPath, len(ep.Addresses), maxAddresses))
		}
		for j, addr := range ep.Addresses {
			errs = append(errs, validateAddress(addr, addrType, addrPath.Index(j))...)
		}
		if ep.NodeName != nil {
			for _, msg := range validation.IsDNS1123Subdomain(*ep.NodeName) {
				errs = append(errs, field.Invalid(idx.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		topo := idx.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxTopologyLabels {
			errs = append(errs, field.TooMany(topo, len(ep.DeprecatedTopology), maxTopologyLabels))
		}
		errs = append(errs, metav1validation.ValidateLabels(ep.DeprecatedTopology, topo)...)
		if ep.Hostname != nil {
			errs = append(errs, vu.DNSLabel(*ep.Hostname, idx.Child("hostname"))...)
		}
		if ep.Hints != nil {
			errs = append(errs, validateHints(ep.Hints, idx.Child("hints"))...)
		}
	}
	return errs
}

func validateAddress(addr string, addrType discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	// Unknown address types were reported already; their addresses are not judged.
	switch addrType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		if errs := validation.IsValidIPForLegacyField(fldPath, addr, true, nil); len(errs) > 0 {
			return errs
		}
		isV4 := net.ParseIP(addr).To4() != nil
		var errs field.ErrorList
		if addrType == discoveryv1.AddressTypeIPv4 && !isV4 {
			errs = append(errs, field.Invalid(fldPath, addr, "must be an IPv4 address"))
		}
		if addrType == discoveryv1.AddressTypeIPv6 && isV4 {
			errs = append(errs, field.Invalid(fldPath, addr, "must be an IPv6 address"))
		}
		return append(errs, vu.EndpointIP(addr, fldPath)...)
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(fldPath, addr)
	}
	return nil
}

func validateHints(h *discoveryv1.EndpointHints, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	zones := fldPath.Child("forZones")
	if len(h.ForZones) > maxHints {
		errs = append(errs, field.TooMany(zones, len(h.ForZones), maxHints))
	}
	seen := map[string]bool{}
	for i, z := range h.ForZones {
		p := zones.Index(i).Child("name")
		if z.Name == "" {
			errs = append(errs, field.Required(p, ""))
		} else if seen[z.Name] {
			errs = append(errs, field.Duplicate(p, z.Name))
		} else {
			errs = append(errs, metav1validation.ValidateLabels(map[string]string{corev1.LabelTopologyZone: z.Name}, p)...)
		}
		seen[z.Name] = true
	}
	nodes := fldPath.Child("forNodes")
	if len(h.ForNodes) > maxHints {
		errs = append(errs, field.TooMany(nodes, len(h.ForNodes), maxHints))
	}
	for i, n := range h.ForNodes {
		if n.Name == "" {
			errs = append(errs, field.Required(nodes.Index(i).Child("name"), ""))
		}
	}
	return errs
}

func validatePorts(ports []discoveryv1.EndpointPort, fldPath *field.Path) field.ErrorList {
	if len(ports) > maxPorts {
		return field.ErrorList{field.TooMany(fldPath, len(ports), maxPorts)}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, p := range ports {
		idx := fldPath.Index(i)
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if name != "" {
			errs = append(errs, vu.DNSLabel(name, idx.Child("name"))...)
		}
		if names[name] {
			errs = append(errs, field.Duplicate(idx.Child("name"), name))
		}
		names[name] = true
		if p.Protocol == nil {
			errs = append(errs, field.Required(idx.Child("protocol"), ""))
		} else if *p.Protocol != corev1.ProtocolTCP && *p.Protocol != corev1.ProtocolUDP && *p.Protocol != corev1.ProtocolSCTP {
			errs = append(errs, field.NotSupported(idx.Child("protocol"), *p.Protocol, portProtocols))
		}
		if p.AppProtocol != nil {
			errs = append(errs, vu.QualifiedName(*p.AppProtocol, idx.Child("appProtocol"))...)
		}
	}
	return errs
}
