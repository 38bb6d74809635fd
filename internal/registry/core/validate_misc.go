package core

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxObjectDataSize is the largest total data a ConfigMap or Secret may hold (1 MiB).
const maxObjectDataSize = corev1.MaxSecretSize

const msgImmutableWhenSet = "field is immutable when `immutable` is set"

// ValidateNamespace checks a namespace: a DNS-1123 label name and valid spec finalizers.
func ValidateNamespace(ns *corev1.Namespace) field.ErrorList {
	errs := validateObjectMeta(&ns.ObjectMeta, false, apivalidation.NameIsDNSLabel)
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), specPath.Child("finalizers").Index(i))...)
	}
	return errs
}

// ValidateNamespaceUpdate checks a namespace update.
func ValidateNamespaceUpdate(ns, old *corev1.Namespace) field.ErrorList {
	errs := validateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta)
	return append(errs, ValidateNamespace(ns)...)
}

// ValidateNamespaceStatusUpdate: the phase follows the deletion timestamp.
func ValidateNamespaceStatusUpdate(ns, old *corev1.Namespace) field.ErrorList {
	errs := validateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta)
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			errs = append(errs, field.Invalid(statusPath.Child("Phase"), ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		errs = append(errs, field.Invalid(statusPath.Child("Phase"), ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}

// ValidateNamespaceFinalizeUpdate checks namespaces/finalize.
func ValidateNamespaceFinalizeUpdate(ns, old *corev1.Namespace) field.ErrorList {
	errs := validateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta)
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), specPath.Child("finalizers").Index(i))...)
	}
	return errs
}

// ValidateNode checks a node for create.
func ValidateNode(node *corev1.Node) field.ErrorList {
	errs := validateObjectMeta(&node.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	return append(errs, validateNodeBody(node)...)
}

func validateNodeBody(node *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	// Kubernetes reports taint errors under metadata.taints; clients match that path.
	errs = append(errs, validateNodeTaints(node.Spec.Taints, metadataPath.Child("taints"))...)
	errs = append(errs, validateNodeResources(node)...)
	cidrsPath := specPath.Child("podCIDRs")
	for i, cidr := range node.Spec.PodCIDRs {
		errs = append(errs, validateCIDR(cidr, cidrsPath.Index(i))...)
	}
	if len(node.Spec.PodCIDRs) > 2 {
		errs = append(errs, field.Invalid(cidrsPath, node.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
	}
	seen := sets.New[string]()
	for i, cidr := range node.Spec.PodCIDRs {
		if seen.Has(cidr) {
			errs = append(errs, field.Duplicate(cidrsPath.Index(i), cidr))
		}
		seen.Insert(cidr)
	}
	if node.Spec.PodCIDR != "" && (len(node.Spec.PodCIDRs) == 0 || node.Spec.PodCIDRs[0] != node.Spec.PodCIDR) {
		errs = append(errs, field.Invalid(specPath.Child("podCIDR"), node.Spec.PodCIDR, "must match `podCIDRs[0]`"))
	}
	return errs
}

func validateNodeResources(node *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(node.Status.Capacity) {
		errs = append(errs, validateResourceQuantityValue(string(name), node.Status.Capacity[name], statusPath.Child("capacity").Key(string(name)))...)
	}
	for _, name := range sortedResourceNames(node.Status.Allocatable) {
		errs = append(errs, validateResourceQuantityValue(string(name), node.Status.Allocatable[name], statusPath.Child("allocatable").Key(string(name)))...)
	}
	return errs
}

func validateNodeTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	type key struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[key]bool{}
	for i, t := range taints {
		p := fldPath.Index(i)
		errs = append(errs, validateQualifiedName(t.Key, p.Child("key"))...)
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
		}
		errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		k := key{t.Key, t.Effect}
		if seen[k] {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
		}
		seen[k] = true
	}
	return errs
}

// ValidateNodeUpdate checks a node update: podCIDR and providerID may only go from "" to a value.
func ValidateNodeUpdate(node, old *corev1.Node) field.ErrorList {
	errs := validateObjectMetaUpdate(&node.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateNodeBody(node)...)
	if len(old.Spec.PodCIDRs) > 0 && !reflect.DeepEqual(old.Spec.PodCIDRs, node.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(specPath.Child("podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != node.Spec.ProviderID {
		errs = append(errs, field.Forbidden(specPath.Child("providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	if node.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(specPath.Child("externalID"), "may not be updated"))
	}
	addresses := map[corev1.NodeAddress]bool{}
	for i, a := range node.Status.Addresses {
		if addresses[a] {
			errs = append(errs, field.Duplicate(statusPath.Child("addresses").Index(i), a))
		}
		addresses[a] = true
	}
	return errs
}

// ValidateConfigMap checks keys, the duplicate-key rule between data and binaryData, and size.
func ValidateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := validateObjectMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	total := 0
	for _, key := range sortedKeys(cm.Data) {
		p := field.NewPath("data").Key(key)
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(p, key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(p, key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		total += len(cm.BinaryData[key])
	}
	if total > maxObjectDataSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxObjectDataSize))
	}
	return errs
}

// ValidateConfigMapUpdate adds the `immutable: true` rules.
func ValidateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	errs := validateObjectMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta)
	if old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), msgImmutableWhenSet))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), msgImmutableWhenSet))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), msgImmutableWhenSet))
		}
	}
	return append(errs, ValidateConfigMap(cm)...)
}

// ValidateSecret checks keys, size and the keys each well-known secret type requires.
func ValidateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	dataPath := field.NewPath("data")
	total := 0
	for _, key := range sortedKeys(s.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		total += len(s.Data[key])
	}
	if total > maxObjectDataSize {
		errs = append(errs, field.TooLong(dataPath, "", maxObjectDataSize))
	}
	requireKey := func(key string) {
		if _, ok := s.Data[key]; !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
	}
	requireJSON := func(key string) {
		raw, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(raw, &map[string]interface{}{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(metadataPath.Child("annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, hasUser := s.Data[corev1.BasicAuthUsernameKey]
		_, hasPassword := s.Data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPassword {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""))
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		requireKey(corev1.TLSCertKey)
		requireKey(corev1.TLSPrivateKeyKey)
	}
	return errs
}

// ValidateSecretUpdate adds the immutable type and `immutable: true` rules.
func ValidateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := validateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateImmutable(s.Type, old.Type, field.NewPath("type"))...)
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), msgImmutableWhenSet))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), msgImmutableWhenSet))
		}
	}
	return append(errs, ValidateSecret(s)...)
}

// ValidateServiceAccount checks a service account.
func ValidateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	errs := validateObjectMeta(&sa.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	for i, ref := range sa.ImagePullSecrets {
		if ref.Name == "" {
			errs = append(errs, field.Required(field.NewPath("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return errs
}

// ValidateServiceAccountUpdate checks a service account update.
func ValidateServiceAccountUpdate(sa, old *corev1.ServiceAccount) field.ErrorList {
	errs := validateObjectMetaUpdate(&sa.ObjectMeta, &old.ObjectMeta)
	return append(errs, ValidateServiceAccount(sa)...)
}

// ValidateEvent checks a core/v1 event: the involved object's namespace must agree with the event's.
func ValidateEvent(ev *corev1.Event) field.ErrorList {
	errs := validateObjectMeta(&ev.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	involvedNS := field.NewPath("involvedObject", "namespace")
	if ev.InvolvedObject.Namespace == "" {
		if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
			errs = append(errs, field.Invalid(involvedNS, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else if ev.Namespace != ev.InvolvedObject.Namespace {
		errs = append(errs, field.Invalid(involvedNS, ev.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if ev.Type != "" && ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		// Old clients wrote free-form types; Kubernetes only checks them for new-style events.
		if ev.ReportingController != "" {
			errs = append(errs, field.Invalid(field.NewPath("type"), ev.Type, fmt.Sprintf("has invalid value: %v", ev.Type)))
		}
	}
	if ev.ReportingController != "" {
		errs = append(errs, validateQualifiedName(ev.ReportingController, field.NewPath("reportingComponent"))...)
	}
	if len(ev.ReportingInstance) > 128 {
		errs = append(errs, field.TooLong(field.NewPath("reportingInstance"), "", 128))
	}
	if len(ev.Action) > 128 {
		errs = append(errs, field.TooLong(field.NewPath("action"), "", 128))
	}
	if len(ev.Reason) > 128 {
		errs = append(errs, field.TooLong(field.NewPath("reason"), "", 128))
	}
	if len(ev.Message) > 4096 {
		errs = append(errs, field.TooLong(field.NewPath("message"), "", 4096))
	}
	return errs
}

// ValidateEventUpdate checks an event update.
func ValidateEventUpdate(ev, old *corev1.Event) field.ErrorList {
	errs := validateObjectMetaUpdate(&ev.ObjectMeta, &old.ObjectMeta)
	return append(errs, ValidateEvent(ev)...)
}

// ValidateEndpoints checks endpoints subsets.
func ValidateEndpoints(ep *corev1.Endpoints) field.ErrorList {
	errs := validateObjectMeta(&ep.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	for i := range ep.Subsets {
		ss := &ep.Subsets[i]
		p := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], p.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			port := &ss.Ports[j]
			pp := p.Child("ports").Index(j)
			if len(ss.Ports) > 1 && port.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			} else if port.Name != "" {
				errs = append(errs, validateDNS1123Label(port.Name, pp.Child("name"))...)
			}
			for _, msg := range validation.IsValidPortNum(int(port.Port)) {
				errs = append(errs, field.Invalid(pp.Child("port"), port.Port, msg))
			}
			errs = append(errs, validateEnum(port.Protocol, pp.Child("protocol"), corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP)...)
			if port.AppProtocol != nil {
				errs = append(errs, validateQualifiedName(*port.AppProtocol, pp.Child("appProtocol"))...)
			}
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	errs := validateIP(a.IP, fldPath.Child("ip"))
	if len(errs) == 0 {
		errs = append(errs, validateNonSpecialIP(a.IP, fldPath.Child("ip"))...)
	}
	if a.Hostname != "" {
		errs = append(errs, validateDNS1123Label(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil {
		errs = append(errs, validateDNS1123Subdomain(*a.NodeName, fldPath.Child("nodeName"))...)
	}
	return errs
}

// ValidateEndpointsUpdate checks an endpoints update.
func ValidateEndpointsUpdate(ep, old *corev1.Endpoints) field.ErrorList {
	errs := validateObjectMetaUpdate(&ep.ObjectMeta, &old.ObjectMeta)
	return append(errs, ValidateEndpoints(ep)...)
}

var standardLimitTypes = sets.New(string(corev1.LimitTypePod), string(corev1.LimitTypeContainer), string(corev1.LimitTypePersistentVolumeClaim))

// ValidateLimitRange checks limit types, resource names and the ordering min <= defaultRequest <=
// default <= max.
func ValidateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	errs := validateObjectMeta(&lr.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	seenTypes := sets.New[corev1.LimitType]()
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		p := specPath.Child("limits").Index(i)
		if errsType := validateQualifiedName(string(item.Type), p.Child("type")); len(errsType) > 0 {
			errs = append(errs, errsType...)
		} else if !strings.Contains(string(item.Type), "/") && !standardLimitTypes.Has(string(item.Type)) {
			errs = append(errs, field.Invalid(p.Child("type"), item.Type, "must be a standard limit type or fully qualified"))
		}
		if seenTypes.Has(item.Type) {
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		seenTypes.Insert(item.Type)

		checkNames := func(list corev1.ResourceList, child string) {
			for _, name := range sortedResourceNames(list) {
				rp := p.Child(child).Key(string(name))
				if item.Type == corev1.LimitTypePod || item.Type == corev1.LimitTypeContainer {
					errs = append(errs, validateContainerResourceName(string(name), rp)...)
				} else {
					errs = append(errs, validateResourceName(string(name), rp)...)
				}
			}
		}
		checkNames(item.Max, "max")
		checkNames(item.Min, "min")
		checkNames(item.MaxLimitRequestRatio, "maxLimitRequestRatio")
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			checkNames(item.Default, "default")
			checkNames(item.DefaultRequest, "defaultRequest")
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := item.Min[corev1.ResourceStorage]
			_, hasMax := item.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}

		keys := sets.New[corev1.ResourceName]()
		for _, l := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
			for k := range l {
				keys.Insert(k)
			}
		}
		for _, k := range sets.List(keys) {
			minQ, hasMin := item.Min[k]
			maxQ, hasMax := item.Max[k]
			defQ, hasDef := item.Default[k]
			reqQ, hasReq := item.DefaultRequest[k]
			ratio, hasRatio := item.MaxLimitRequestRatio[k]
			key := string(k)
			if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("min").Key(key), minQ.String(), fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
			if hasReq && hasMin && minQ.Cmp(reqQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), reqQ.String(), fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), reqQ.String())))
			}
			if hasReq && hasMax && reqQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), reqQ.String(), fmt.Sprintf("default request value %s is greater than max value %s", reqQ.String(), maxQ.String())))
			}
			if hasReq && hasDef && reqQ.Cmp(defQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), reqQ.String(), fmt.Sprintf("default request value %s is greater than default limit value %s", reqQ.String(), defQ.String())))
			}
			if hasDef && hasMin && minQ.Cmp(defQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(key), minQ.String(), fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), defQ.String())))
			}
			if hasDef && hasMax && defQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(key), maxQ.String(), fmt.Sprintf("default value %s is greater than max value %s", defQ.String(), maxQ.String())))
			}
			if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
				errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio.String(), fmt.Sprintf("ratio %s is less than 1", ratio.String())))
			}
			for _, l := range []struct {
				child string
				q     resource.Quantity
				ok    bool
			}{{"min", minQ, hasMin}, {"max", maxQ, hasMax}, {"default", defQ, hasDef}, {"defaultRequest", reqQ, hasReq}} {
				if l.ok {
					errs = append(errs, validateNonnegativeQuantity(l.q, p.Child(l.child).Key(key))...)
				}
			}
		}
	}
	return errs
}

// ValidateLimitRangeUpdate checks a limit range update.
func ValidateLimitRangeUpdate(lr, old *corev1.LimitRange) field.ErrorList {
	errs := validateObjectMetaUpdate(&lr.ObjectMeta, &old.ObjectMeta)
	return append(errs, ValidateLimitRange(lr)...)
}

var standardQuotaResources = sets.New(
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims",
	"services.nodeports", "services.loadbalancers", "cpu", "memory", "ephemeral-storage", "storage",
	"requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
)

func validateQuotaResourceName(name string, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if len(errs) > 0 {
		return errs
	}
	if !strings.Contains(name, "/") && !standardQuotaResources.Has(name) &&
		!strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) && !strings.HasPrefix(name, "requests.hugepages-") &&
		!strings.HasPrefix(name, "limits.hugepages-") {
		errs = append(errs, field.Invalid(fldPath, name, msgInvalidQuotaName))
	}
	return errs
}

var quotaScopes = []corev1.ResourceQuotaScope{
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeCrossNamespacePodAffinity, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeTerminating,
	corev1.ResourceQuotaScopeVolumeAttributesClass,
}

func validateQuotaList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(list) {
		p := fldPath.Key(string(name))
		errs = append(errs, validateQuotaResourceName(string(name), p)...)
		errs = append(errs, validateResourceQuantityValue(string(name), list[name], p)...)
	}
	return errs
}

func isQuotaScope(s corev1.ResourceQuotaScope) bool {
	for _, q := range quotaScopes {
		if q == s {
			return true
		}
	}
	return false
}

// ValidateResourceQuota checks hard limits, scopes and the scope selector.
func ValidateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	errs := validateObjectMeta(&q.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	errs = append(errs, validateQuotaSpec(&q.Spec)...)
	errs = append(errs, validateQuotaList(q.Status.Hard, statusPath.Child("hard"))...)
	errs = append(errs, validateQuotaList(q.Status.Used, statusPath.Child("used"))...)
	return errs
}

func validateQuotaSpec(spec *corev1.ResourceQuotaSpec) field.ErrorList {
	errs := validateQuotaList(spec.Hard, specPath.Child("hard"))
	scopes := sets.New[corev1.ResourceQuotaScope]()
	for _, s := range spec.Scopes {
		if !isQuotaScope(s) {
			errs = append(errs, field.Invalid(specPath.Child("scopes"), spec.Scopes, "unsupported scope"))
		}
		scopes.Insert(s)
	}
	if spec.ScopeSelector != nil {
		p := specPath.Child("scopeSelector", "matchExpressions")
		for _, req := range spec.ScopeSelector.MatchExpressions {
			if !isQuotaScope(req.ScopeName) {
				errs = append(errs, field.Invalid(p.Child("scopeName"), req.ScopeName, "unsupported scope"))
			}
			switch req.ScopeName {
			case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
				corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
				if req.Operator != corev1.ScopeSelectorOpExists {
					errs = append(errs, field.Invalid(p.Child("operator"), req.Operator,
						"must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
				}
			}
			switch req.Operator {
			case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
				if len(req.Values) == 0 {
					errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
			case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
				if len(req.Values) != 0 {
					errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
			}
			scopes.Insert(req.ScopeName)
		}
	}
	if scopes.HasAll(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort) ||
		scopes.HasAll(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating) {
		errs = append(errs, field.Invalid(specPath.Child("scopes"), spec.Scopes, "conflicting scopes"))
	}
	return errs
}

// ValidateResourceQuotaUpdate: scopes may not change.
func ValidateResourceQuotaUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	errs := validateObjectMetaUpdate(&q.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateQuotaSpec(&q.Spec)...)
	if !sets.New(q.Spec.Scopes...).Equal(sets.New(old.Spec.Scopes...)) {
		errs = append(errs, field.Invalid(specPath.Child("scopes"), q.Spec.Scopes, msgFieldImmutable))
	}
	return errs
}

// ValidateResourceQuotaStatusUpdate checks resourcequotas/status.
func ValidateResourceQuotaStatusUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	errs := validateObjectMetaUpdate(&q.ObjectMeta, &old.ObjectMeta)
	if q.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	errs = append(errs, validateQuotaList(q.Status.Hard, statusPath.Child("hard"))...)
	errs = append(errs, validateQuotaList(q.Status.Used, statusPath.Child("used"))...)
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	return sets.List(sets.KeySet(m))
}
