package core

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxClientIPServiceAffinitySeconds is the longest ClientIP session affinity (one day).
const maxClientIPServiceAffinitySeconds = 86400

var supportedServiceTypes = []corev1.ServiceType{
	corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort,
}

func isHeadless(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP == corev1.ClusterIPNone ||
		(len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone)
}

// ValidateService checks a service for create. Service names are DNS-1035 labels.
func ValidateService(svc *corev1.Service) field.ErrorList {
	errs := validateObjectMeta(&svc.ObjectMeta, true, apivalidation.NameIsDNS1035Label)
	spec := &svc.Spec
	errs = append(errs, validateEnum(spec.Type, specPath.Child("type"), supportedServiceTypes...)...)

	if len(spec.Ports) == 0 && !isHeadless(svc) && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	if spec.Type == corev1.ServiceTypeExternalName {
		errs = append(errs, validateExternalNameService(spec)...)
	} else {
		errs = append(errs, validateClusterIPs(svc)...)
	}
	errs = append(errs, validateServicePorts(svc)...)
	if spec.Selector != nil {
		errs = append(errs, validateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	errs = append(errs, validateSessionAffinity(spec)...)
	for i, ip := range spec.ExternalIPs {
		errs = append(errs, validateNonSpecialIP(ip, specPath.Child("externalIPs").Index(i))...)
	}
	errs = append(errs, validateLoadBalancerFields(spec)...)
	errs = append(errs, validateTrafficPolicies(svc)...)
	return errs
}

// validateExternalNameService checks what an ExternalName service has and must not have.
func validateExternalNameService(spec *corev1.ServiceSpec) field.ErrorList {
	var errs field.ErrorList
	if spec.ClusterIP != "" {
		errs = append(errs, field.Forbidden(specPath.Child("clusterIP"), "may not be set for ExternalName services"))
	}
	if len(spec.ClusterIPs) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
	}
	if len(spec.IPFamilies) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
	}
	if spec.IPFamilyPolicy != nil {
		errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
	}
	name := strings.TrimSuffix(spec.ExternalName, ".")
	if name == "" {
		return append(errs, field.Required(specPath.Child("externalName"), ""))
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(specPath.Child("externalName"), spec.ExternalName, msg))
	}
	return errs
}

// validateServicePorts checks each port and that no port or node port is used twice per protocol.
func validateServicePorts(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	portPath := specPath.Child("ports")
	names := sets.New[string]()
	type portKey struct {
		port     int32
		protocol corev1.Protocol
	}
	seenPorts := map[portKey]bool{}
	seenNodePorts := map[portKey]bool{}
	for i := range spec.Ports {
		p := portPath.Index(i)
		port := &spec.Ports[i]
		errs = append(errs, validateServicePort(port, len(spec.Ports) > 1, isHeadless(svc), names, p)...)
		if spec.Type == corev1.ServiceTypeClusterIP || spec.Type == corev1.ServiceTypeExternalName {
			if port.NodePort != 0 {
				errs = append(errs, field.Forbidden(p.Child("nodePort"), fmt.Sprintf("may not be used when `type` is '%s'", spec.Type)))
			}
		}
		key := portKey{port.Port, port.Protocol}
		if seenPorts[key] {
			errs = append(errs, field.Duplicate(p, corev1.ServicePort{Port: port.Port, Protocol: port.Protocol}))
		}
		seenPorts[key] = true
		if port.NodePort != 0 {
			nkey := portKey{port.NodePort, port.Protocol}
			if seenNodePorts[nkey] {
				errs = append(errs, field.Duplicate(p.Child("nodePort"), port.NodePort))
			}
			seenNodePorts[nkey] = true
		}
	}
	return errs
}

func validateSessionAffinity(spec *corev1.ServiceSpec) field.ErrorList {
	errs := validateEnum(spec.SessionAffinity, specPath.Child("sessionAffinity"), corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone)
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		cfg := spec.SessionAffinityConfig
		if cfg == nil || cfg.ClientIP == nil || cfg.ClientIP.TimeoutSeconds == nil {
			errs = append(errs, field.Required(specPath.Child("sessionAffinityConfig"), "when session affinity type is ClientIP"))
		} else if t := *cfg.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPServiceAffinitySeconds {
			errs = append(errs, field.Invalid(specPath.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), t,
				fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPServiceAffinitySeconds)))
		}
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), "must not be set when `sessionAffinity` is None"))
		}
	}
	return errs
}

// validateLoadBalancerFields checks the fields only a LoadBalancer service may set.
func validateLoadBalancerFields(spec *corev1.ServiceSpec) field.ErrorList {
	var errs field.ErrorList
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		for i, cidr := range spec.LoadBalancerSourceRanges {
			errs = append(errs, validateCIDR(strings.TrimSpace(cidr), specPath.Child("loadBalancerSourceRanges").Index(i))...)
		}
		if spec.LoadBalancerClass != nil {
			errs = append(errs, validateQualifiedName(*spec.LoadBalancerClass, specPath.Child("loadBalancerClass"))...)
		}
		return errs
	}
	if len(spec.LoadBalancerSourceRanges) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("loadBalancerSourceRanges"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.LoadBalancerClass != nil {
		errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.AllocateLoadBalancerNodePorts != nil {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	return errs
}

// validateTrafficPolicies checks the external and internal traffic policies, the health check
// node port and the traffic distribution.
func validateTrafficPolicies(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	external := spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer
	if spec.ExternalTrafficPolicy != "" {
		if !external {
			errs = append(errs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		} else {
			errs = append(errs, validateEnum(spec.ExternalTrafficPolicy, specPath.Child("externalTrafficPolicy"), corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal)...)
		}
	} else if external {
		errs = append(errs, field.Required(specPath.Child("externalTrafficPolicy"), ""))
	}
	if spec.HealthCheckNodePort != 0 {
		if !NeedsHealthCheck(svc) {
			errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		} else {
			for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
				errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort, msg))
			}
		}
	}
	if spec.InternalTrafficPolicy != nil {
		errs = append(errs, validateEnum(*spec.InternalTrafficPolicy, specPath.Child("internalTrafficPolicy"), corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal)...)
	} else if spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
	}
	if spec.TrafficDistribution != nil && *spec.TrafficDistribution == "" {
		errs = append(errs, field.Required(specPath.Child("trafficDistribution"), ""))
	}
	return errs
}

func validateServicePort(port *corev1.ServicePort, requireName, headless bool, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && port.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if port.Name != "" {
		errs = append(errs, validateDNS1123Label(port.Name, fldPath.Child("name"))...)
		if names.Has(port.Name) {
			errs = append(errs, field.Duplicate(fldPath.Child("name"), port.Name))
		}
		names.Insert(port.Name)
	}
	for _, msg := range validation.IsValidPortNum(int(port.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), port.Port, msg))
	}
	errs = append(errs, validateEnum(port.Protocol, fldPath.Child("protocol"), corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP)...)
	if port.TargetPort != intstr.FromInt32(0) || !headless {
		errs = append(errs, validatePortNumOrName(port.TargetPort, fldPath.Child("targetPort"))...)
	}
	if port.NodePort != 0 {
		for _, msg := range validation.IsValidPortNum(int(port.NodePort)) {
			errs = append(errs, field.Invalid(fldPath.Child("nodePort"), port.NodePort, msg))
		}
	}
	if port.AppProtocol != nil {
		errs = append(errs, validateQualifiedName(*port.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return errs
}

func validateClusterIPs(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	ipsPath := specPath.Child("clusterIPs")
	if spec.ClusterIP != "" && spec.ClusterIP != corev1.ClusterIPNone {
		errs = append(errs, validateIP(spec.ClusterIP, specPath.Child("clusterIP"))...)
	}
	if spec.ClusterIP != "" && len(spec.ClusterIPs) > 0 && spec.ClusterIPs[0] != spec.ClusterIP {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			if i != 0 || len(spec.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		errs = append(errs, validateIP(ip, ipsPath.Index(i))...)
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	families := sets.New[corev1.IPFamily]()
	for i, f := range spec.IPFamilies {
		errs = append(errs, validateEnum(f, specPath.Child("ipFamilies").Index(i), corev1.IPv4Protocol, corev1.IPv6Protocol)...)
		if families.Has(f) {
			errs = append(errs, field.Duplicate(specPath.Child("ipFamilies").Index(i), f))
		}
		families.Insert(f)
	}
	if spec.IPFamilyPolicy != nil {
		errs = append(errs, validateEnum(*spec.IPFamilyPolicy, specPath.Child("ipFamilyPolicy"),
			corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack)...)
	}
	return errs
}

// ValidateServiceUpdate checks a service update: validity, and cluster IPs that never change once
// allocated (except to or from ExternalName).
func ValidateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	errs := validateObjectMetaUpdate(&svc.ObjectMeta, &old.ObjectMeta)
	if svc.Spec.Type != corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName &&
		!(isHeadless(svc) && isHeadless(old)) {
		ipsPath := specPath.Child("clusterIPs")
		n, o := svc.Spec.ClusterIPs, old.Spec.ClusterIPs
		switch {
		case len(o) > 0 && len(n) == 0:
			errs = append(errs, field.Invalid(ipsPath.Index(0), n, "primary clusterIP can not be unset"))
		case len(o) > 0 && n[0] != o[0]:
			errs = append(errs, field.Invalid(ipsPath.Index(0), n, "may not change once set"))
		case len(o) == 2 && len(n) == 2 && n[1] != o[1]:
			errs = append(errs, field.Invalid(ipsPath.Index(1), n, "may not change once set"))
		}
		if len(o) == 2 && len(n) == 1 && (svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
			errs = append(errs, field.Invalid(specPath.Child("ipFamilyPolicy"), svc.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary clusterIP"))
		}
		if len(old.Spec.IPFamilies) > 0 && len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] != old.Spec.IPFamilies[0] {
			errs = append(errs, field.Invalid(specPath.Child("ipFamilies").Index(0), svc.Spec.IPFamilies, "may not change once set"))
		}
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		!equalStringPtr(old.Spec.LoadBalancerClass, svc.Spec.LoadBalancerClass) {
		errs = append(errs, field.Invalid(specPath.Child("loadBalancerClass"), svc.Spec.LoadBalancerClass, "may not change once set"))
	}
	if NeedsHealthCheck(svc) && NeedsHealthCheck(old) && svc.Spec.HealthCheckNodePort != old.Spec.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(specPath.Child("healthCheckNodePort"), "field is immutable"))
	}
	return append(errs, ValidateService(svc)...)
}

// NeedsHealthCheck reports whether svc gets a health-check node port: a LoadBalancer Service with
// externalTrafficPolicy Local, as Kubernetes.
func NeedsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ValidateServiceStatusUpdate checks services/status: the load balancer ingress.
func ValidateServiceStatusUpdate(svc, old *corev1.Service) field.ErrorList {
	errs := validateObjectMetaUpdate(&svc.ObjectMeta, &old.ObjectMeta)
	for i, ing := range svc.Status.LoadBalancer.Ingress {
		p := statusPath.Child("loadBalancer", "ingress").Index(i)
		if ing.IP != "" {
			errs = append(errs, validateIP(ing.IP, p.Child("ip"))...)
		}
		if ing.Hostname != "" {
			errs = append(errs, validateDNS1123Subdomain(ing.Hostname, p.Child("hostname"))...)
		}
		if ing.IPMode != nil {
			errs = append(errs, validateEnum(*ing.IPMode, p.Child("ipMode"), corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP)...)
		}
	}
	return errs
}
