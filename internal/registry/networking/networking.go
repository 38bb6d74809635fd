package networking

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

const (
	// ingressClassAnnotation is the class annotation that predates spec.ingressClassName.
	ingressClassAnnotation       = "kubernetes.io/ingress.class"
	maxLenIngressClassController = 250
)

var (
	supportedPathTypes   = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
	supportedScopes      = []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}
	supportedProtocols   = []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}
	supportedPolicyTypes = []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
)

// Resources returns the networking.k8s.io/v1 resources.
func Resources() []*registry.Resource {
	gv := networkingv1.SchemeGroupVersion
	return append([]*registry.Resource{
		{
			GroupVersion: gv, Kind: "Ingress", ListKind: "IngressList",
			Plural: "ingresses", Singular: "ingress", ShortNames: []string{"ing"}, Namespaced: true,
			New:     func() runtime.Object { return &networkingv1.Ingress{} },
			NewList: func() runtime.Object { return &networkingv1.IngressList{} },
			Strategy: &vu.Strategy[*networkingv1.Ingress]{
				Namespaced:  true,
				APIVersion:  gv.String(),
				ClearStatus: func(i *networkingv1.Ingress) { i.Status = networkingv1.IngressStatus{} },
				KeepStatus:  func(i, old *networkingv1.Ingress) { i.Status = old.Status },
				SpecEqual:   func(i, old *networkingv1.Ingress) bool { return apiequality.Semantic.DeepEqual(i.Spec, old.Spec) },
				// ValidateObject runs on create only here: the class annotation must agree with
				// ingressClassName on new objects, while stored ones may still disagree.
				ValidateObject: ValidateIngressCreate,
				ValidateUpdateObject: func(i, _ *networkingv1.Ingress) field.ErrorList {
					return ValidateIngressSpec(&i.Spec, field.NewPath("spec"))
				},
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*networkingv1.Ingress]{
				APIVersion: gv.String(),
				KeepSpec:   func(i, old *networkingv1.Ingress) { i.Spec = old.Spec },
				ValidateStatus: func(i, old *networkingv1.Ingress) field.ErrorList {
					return validateIngressLoadBalancerStatus(&i.Status.LoadBalancer, &old.Status.LoadBalancer, field.NewPath("status", "loadBalancer"))
				},
			},
		},
		{
			GroupVersion: gv, Kind: "IngressClass", ListKind: "IngressClassList",
			Plural: "ingressclasses", Singular: "ingressclass",
			New:     func() runtime.Object { return &networkingv1.IngressClass{} },
			NewList: func() runtime.Object { return &networkingv1.IngressClassList{} },
			Strategy: &vu.Strategy[*networkingv1.IngressClass]{
				SpecEqual: func(ic, old *networkingv1.IngressClass) bool {
					return apiequality.Semantic.DeepEqual(ic.Spec, old.Spec)
				},
				ValidateObject: func(ic *networkingv1.IngressClass) field.ErrorList {
					return validateIngressClassSpec(&ic.Spec, field.NewPath("spec"))
				},
				// Ingresses already handled by one controller must not silently move to another.
				ValidateChange: func(ic, old *networkingv1.IngressClass) field.ErrorList {
					return vu.Immutable(ic.Spec.Controller, old.Spec.Controller, field.NewPath("spec", "controller"))
				},
				UnconditionalUpdate: true,
			},
		},
		{
			GroupVersion: gv, Kind: "NetworkPolicy", ListKind: "NetworkPolicyList",
			Plural: "networkpolicies", Singular: "networkpolicy", ShortNames: []string{"netpol"}, Namespaced: true,
			New:     func() runtime.Object { return &networkingv1.NetworkPolicy{} },
			NewList: func() runtime.Object { return &networkingv1.NetworkPolicyList{} },
			Strategy: &vu.Strategy[*networkingv1.NetworkPolicy]{
				Namespaced: true,
				SpecEqual: func(np, old *networkingv1.NetworkPolicy) bool {
					return apiequality.Semantic.DeepEqual(np.Spec, old.Spec)
				},
				ValidateObject: func(np *networkingv1.NetworkPolicy) field.ErrorList {
					return ValidateNetworkPolicySpec(&np.Spec, field.NewPath("spec"))
				},
				UnconditionalUpdate: true,
			},
		},
	}, addressResources()...)
}

// ValidateIngressCreate adds the create-only rule to ValidateIngressSpec: the legacy class
// annotation, when set with spec.ingressClassName, must agree with it.
func ValidateIngressCreate(i *networkingv1.Ingress) field.ErrorList {
	errs := ValidateIngressSpec(&i.Spec, field.NewPath("spec"))
	if v, ok := i.Annotations[ingressClassAnnotation]; ok && i.Spec.IngressClassName != nil && v != *i.Spec.IngressClassName {
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(ingressClassAnnotation), v, "must match `ingressClassName` when both are specified"))
	}
	return errs
}

// ValidateIngressSpec checks that a default backend or rules are given, each rule's host and paths,
// the backends, the TLS hosts and secret names, and the class name.
func ValidateIngressSpec(spec *networkingv1.IngressSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(fldPath, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(spec.DefaultBackend, fldPath.Child("defaultBackend"))...)
	}
	for i, rule := range spec.Rules {
		errs = append(errs, validateIngressRule(rule, fldPath.Child("rules").Index(i))...)
	}
	for i, tls := range spec.TLS {
		tlsPath := fldPath.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			errs = append(errs, validateHost(host, tlsPath.Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				errs = append(errs, field.Invalid(tlsPath.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return errs
}

// validateHost accepts a DNS subdomain, or a wildcard one ("*.example.com") where it has a "*".
func validateHost(host string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := validation.IsDNS1123Subdomain
	if strings.Contains(host, "*") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	for _, msg := range check(host) {
		errs = append(errs, field.Invalid(fldPath, host, msg))
	}
	return errs
}

func validateIngressRule(rule networkingv1.IngressRule, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rule.Host != "" {
		if netutils.ParseIPSloppy(rule.Host) != nil {
			errs = append(errs, field.Invalid(fldPath.Child("host"), rule.Host, "must be a DNS name, not an IP address"))
		}
		errs = append(errs, validateHost(rule.Host, fldPath.Child("host"))...)
	}
	if rule.HTTP == nil {
		return errs
	}
	httpPath := fldPath.Child("http")
	if len(rule.HTTP.Paths) == 0 {
		errs = append(errs, field.Required(httpPath.Child("paths"), ""))
	}
	for i := range rule.HTTP.Paths {
		errs = append(errs, validateHTTPIngressPath(&rule.HTTP.Paths[i], httpPath.Child("paths").Index(i))...)
	}
	return errs
}

// validateHTTPIngressPath requires a path type; Exact and Prefix paths must be absolute and clean,
// ImplementationSpecific ones absolute when given.
func validateHTTPIngressPath(p *networkingv1.HTTPIngressPath, fldPath *field.Path) field.ErrorList {
	if p.PathType == nil {
		return field.ErrorList{field.Required(fldPath.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	pathPath := fldPath.Child("path")
	switch *p.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(p.Path, "/") {
			errs = append(errs, field.Invalid(pathPath, p.Path, "must be an absolute path"))
		}
		for _, seq := range invalidPathSequences {
			if strings.Contains(p.Path, seq) {
				errs = append(errs, field.Invalid(pathPath, p.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range invalidPathSuffixes {
			if strings.HasSuffix(p.Path, suffix) {
				errs = append(errs, field.Invalid(pathPath, p.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
			errs = append(errs, field.Invalid(pathPath, p.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("pathType"), *p.PathType, supportedPathTypes))
	}
	return append(errs, validateIngressBackend(&p.Backend, fldPath.Child("backend"))...)
}

// validateIngressBackend requires exactly one of a service (a DNS-1035 name and a port name or
// number, not both) and a resource reference.
func validateIngressBackend(b *networkingv1.IngressBackend, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(fldPath, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		r := b.Resource
		errs = append(errs, validateReference(r.APIGroup, r.Kind, r.Name, fldPath.Child("resource"))...)
	case b.Service != nil:
		svc := b.Service
		if svc.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("service", "name"), ""))
		} else {
			for _, msg := range apivalidation.NameIsDNS1035Label(svc.Name, false) {
				errs = append(errs, field.Invalid(fldPath.Child("service", "name"), svc.Name, msg))
			}
		}
		hasName, hasNumber := svc.Port.Name != "", svc.Port.Number != 0
		switch {
		case hasName && hasNumber:
			errs = append(errs, field.Invalid(fldPath, "", "cannot set both port name & port number"))
		case hasName:
			for _, msg := range validation.IsValidPortName(svc.Port.Name) {
				errs = append(errs, field.Invalid(fldPath.Child("service", "port", "name"), svc.Port.Name, msg))
			}
		case hasNumber:
			for _, msg := range validation.IsValidPortNum(int(svc.Port.Number)) {
				errs = append(errs, field.Invalid(fldPath.Child("service", "port", "number"), svc.Port.Number, msg))
			}
		default:
			errs = append(errs, field.Required(fldPath, "port name or number is required"))
		}
	default:
		errs = append(errs, field.Invalid(fldPath, "", "resource or service backend is required"))
	}
	return errs
}

// validateReference checks a typed reference: an optional DNS-subdomain API group and a kind and
// name that can be URL path segments.
func validateReference(apiGroup *string, kind, name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if apiGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*apiGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("apiGroup"), *apiGroup, msg))
		}
	}
	for _, f := range []struct{ name, value string }{{"kind", kind}, {"name", name}} {
		if f.value == "" {
			errs = append(errs, field.Required(fldPath.Child(f.name), ""))
			continue
		}
		for _, msg := range content.IsPathSegmentName(f.value) {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	return errs
}

func validateIngressLoadBalancerStatus(s, old *networkingv1.IngressLoadBalancerStatus, fldPath *field.Path) field.ErrorList {
	existing := map[string]bool{}
	for _, ing := range old.Ingress {
		existing[ing.IP] = true
	}
	var errs field.ErrorList
	for i, ing := range s.Ingress {
		p := fldPath.Child("ingress").Index(i)
		// An address already stored stays acceptable, as Kubernetes allows for legacy values.
		if ing.IP != "" && !existing[ing.IP] && netutils.ParseIPSloppy(ing.IP) == nil {
			errs = append(errs, field.Invalid(p.Child("ip"), ing.IP, "must be a valid IP address"))
		}
		if ing.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(ing.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), ing.Hostname, msg))
			}
			if netutils.ParseIPSloppy(ing.Hostname) != nil {
				errs = append(errs, field.Invalid(p.Child("hostname"), ing.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// validateIngressClassSpec requires a domain-prefixed controller name of at most 250 characters
// and checks the parameters reference with its scope.
func validateIngressClassSpec(spec *networkingv1.IngressClassSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	ctrl := fldPath.Child("controller")
	if spec.Controller == "" {
		errs = append(errs, field.Required(ctrl, ""))
	} else {
		if len(spec.Controller) > maxLenIngressClassController {
			errs = append(errs, field.TooLong(ctrl, "", maxLenIngressClassController))
		}
		errs = append(errs, validation.IsDomainPrefixedPath(ctrl, spec.Controller)...)
	}
	params := spec.Parameters
	if params == nil {
		return errs
	}
	pp := fldPath.Child("parameters")
	errs = append(errs, validateReference(params.APIGroup, params.Kind, params.Name, pp)...)
	if params.Scope == nil {
		return append(errs, field.Required(pp.Child("scope"), ""))
	}
	switch *params.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if params.Namespace == nil {
			errs = append(errs, field.Required(pp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range apivalidation.ValidateNamespaceName(*params.Namespace, false) {
				errs = append(errs, field.Invalid(pp.Child("namespace"), *params.Namespace, msg))
			}
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			errs = append(errs, field.Forbidden(pp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(pp.Child("scope"), *params.Scope, supportedScopes))
	}
	return errs
}

// ValidateNetworkPolicySpec checks the pod selector, every rule's ports and peers and the policy
// types.
func ValidateNetworkPolicySpec(spec *networkingv1.NetworkPolicySpec, fldPath *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(&spec.PodSelector, opts, fldPath.Child("podSelector"))
	for i, rule := range spec.Ingress {
		p := fldPath.Child("ingress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], p.Child("ports").Index(j))...)
		}
		for j := range rule.From {
			errs = append(errs, validateNetworkPolicyPeer(&rule.From[j], p.Child("from").Index(j))...)
		}
	}
	for i, rule := range spec.Egress {
		p := fldPath.Child("egress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], p.Child("ports").Index(j))...)
		}
		for j := range rule.To {
			errs = append(errs, validateNetworkPolicyPeer(&rule.To[j], p.Child("to").Index(j))...)
		}
	}
	if len(spec.PolicyTypes) > len(supportedPolicyTypes) {
		return append(errs, field.Invalid(fldPath.Child("policyTypes"), &spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range spec.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(fldPath.Child("policyTypes").Index(i), t, supportedPolicyTypes))
		}
	}
	return errs
}

// validateNetworkPolicyPort checks the protocol and a port number (with an end port not below it)
// or name.
func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p := port.Protocol; p != nil && *p != corev1.ProtocolTCP && *p != corev1.ProtocolUDP && *p != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(fldPath.Child("protocol"), *p, supportedProtocols))
	}
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(fldPath.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
			errs = append(errs, field.Invalid(fldPath.Child("port"), port.Port.IntVal, msg))
		}
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(fldPath.Child("endPort"), *port.EndPort, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*port.EndPort)) {
				errs = append(errs, field.Invalid(fldPath.Child("endPort"), *port.EndPort, msg))
			}
		}
	default:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(fldPath.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
			errs = append(errs, field.Invalid(fldPath.Child("port"), port.Port.StrVal, msg))
		}
	}
	return errs
}

// validateNetworkPolicyPeer requires a peer, and an ipBlock alone.
func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	opts := metav1validation.LabelSelectorValidationOptions{}
	n := 0
	if peer.PodSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts, fldPath.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		n++
		errs = append(errs, validateIPBlock(peer.IPBlock, fldPath.Child("ipBlock"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(fldPath, "must specify a peer"))
	case n > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(fldPath, "may not specify both ipBlock and another peer"))
	}
	return errs
}

// validateIPBlock requires a CIDR and exceptions strictly inside it. Addresses are parsed the
// lenient way Kubernetes v1.32 still accepts (leading zeros), so stored policies stay valid.
func validateIPBlock(ipb *networkingv1.IPBlock, fldPath *field.Path) field.ErrorList {
	cidrPath := fldPath.Child("cidr")
	if ipb.CIDR == "" {
		return field.ErrorList{field.Required(cidrPath, "")}
	}
	_, block, err := netutils.ParseCIDRSloppy(ipb.CIDR)
	if err != nil {
		return field.ErrorList{field.Invalid(cidrPath, ipb.CIDR, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")}
	}
	var errs field.ErrorList
	blockLen, _ := block.Mask.Size()
	for i, s := range ipb.Except {
		p := fldPath.Child("except").Index(i)
		_, except, err := netutils.ParseCIDRSloppy(s)
		if err != nil {
			errs = append(errs, field.Invalid(p, s, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
			continue
		}
		exceptLen, _ := except.Mask.Size()
		if !block.Contains(except.IP) || blockLen >= exceptLen {
			errs = append(errs, field.Invalid(p, s, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}
