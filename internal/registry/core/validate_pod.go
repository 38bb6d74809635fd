package core

import (
	"fmt"
	"math"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/sysctl"
)

const (
	fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"
	maxFileMode      = 0o777

	// podUpdatableFields is the list Kubernetes prints when a pod update touches anything else.
	podUpdatableFields = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)

// ValidatePod checks a pod for create.
func ValidatePod(pod *corev1.Pod) field.ErrorList {
	errs := validateObjectMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	errs = append(errs, validatePodSpec(&pod.Spec, specPath)...)
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	for i, c := range pod.Spec.Containers {
		if c.Image != strings.TrimSpace(c.Image) {
			errs = append(errs, field.Invalid(specPath.Child("containers").Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return errs
}

// ValidatePodTemplateSpec checks a pod template embedded in a workload (fldPath is usually
// spec.template). Workload groups call it from their own validation.
func ValidatePodTemplateSpec(tmpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	errs := validateLabels(tmpl.Labels, fldPath.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(tmpl.Annotations, fldPath.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&tmpl.Spec, fldPath.Child("spec"))...)
	if len(tmpl.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// ValidatePodUpdate checks an update of a pod through the main resource: the new pod must be valid
// and its spec may change only where Kubernetes allows.
func ValidatePodUpdate(pod, old *corev1.Pod) field.ErrorList {
	errs := validateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validatePodSpec(&pod.Spec, specPath)...)

	if len(pod.Spec.Containers) != len(old.Spec.Containers) || len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		errs = append(errs, field.Forbidden(specPath.Child("containers"), "pod updates may not add or remove containers"))
		return errs
	}

	if old.Spec.ActiveDeadlineSeconds != nil {
		deadlinePath := specPath.Child("activeDeadlineSeconds")
		switch {
		case pod.Spec.ActiveDeadlineSeconds == nil:
			errs = append(errs, field.Invalid(deadlinePath, pod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
		case *pod.Spec.ActiveDeadlineSeconds > *old.Spec.ActiveDeadlineSeconds:
			errs = append(errs, field.Invalid(deadlinePath, *pod.Spec.ActiveDeadlineSeconds, "must be less than or equal to previous value"))
		}
	}

	tolerationErrs := validateOnlyAddedTolerations(pod.Spec.Tolerations, old.Spec.Tolerations, specPath.Child("tolerations"))
	errs = append(errs, tolerationErrs...)

	// Compare the specs with every allowed change undone; what remains is forbidden.
	munged := pod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = old.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = old.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	if len(tolerationErrs) == 0 {
		munged.Tolerations = old.Spec.Tolerations
	}
	if old.Spec.TerminationGracePeriodSeconds != nil && *old.Spec.TerminationGracePeriodSeconds < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old.Spec.TerminationGracePeriodSeconds
	}
	// Scheduling gates may only be removed.
	if isSubsetOfGates(munged.SchedulingGates, old.Spec.SchedulingGates) {
		munged.SchedulingGates = old.Spec.SchedulingGates
	}
	if !apiequality.Semantic.DeepEqual(*munged, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", podUpdatableFields, specDiff(old.Spec, *munged))))
	}
	return errs
}

func isSubsetOfGates(gates, old []corev1.PodSchedulingGate) bool {
	have := sets.New[string]()
	for _, g := range old {
		have.Insert(g.Name)
	}
	for _, g := range gates {
		if !have.Has(g.Name) {
			return false
		}
	}
	return true
}

// specDiff renders what changed, as Kubernetes appends to the forbidden-update message. A diff
// is a courtesy: a failure to render one must not fail the request.
func specDiff(old, updated corev1.PodSpec) (diff string) {
	defer func() {
		if recover() != nil {
			diff = ""
		}
	}()
	return cmpDiff(old, updated)
}

// cmpDiff renders a human-readable diff of two API values.
func cmpDiff(old, updated any) string { return cmp.Diff(old, updated) }

func validateOnlyAddedTolerations(tolerations, old []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, o := range old {
		found := false
		for _, n := range tolerations {
			candidate := o
			candidate.TolerationSeconds = n.TolerationSeconds
			if reflect.DeepEqual(candidate, n) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

// ValidatePodStatusUpdate checks an update through pods/status.
func ValidatePodStatusUpdate(pod, old *corev1.Pod) field.ErrorList {
	errs := validateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	st := &pod.Status
	if st.NominatedNodeName != "" {
		errs = append(errs, validateDNS1123Subdomain(st.NominatedNodeName, statusPath.Child("nominatedNodeName"))...)
	}
	if st.Phase != "" {
		errs = append(errs, validateEnum(st.Phase, statusPath.Child("phase"), corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown)...)
	}
	if st.QOSClass != "" {
		errs = append(errs, validateEnum(st.QOSClass, statusPath.Child("qosClass"), corev1.PodQOSBestEffort, corev1.PodQOSBurstable, corev1.PodQOSGuaranteed)...)
	}
	errs = append(errs, validateIPList(st.PodIPs, st.PodIP, statusPath, "podIP", "podIPs")...)
	hostIPs := make([]corev1.PodIP, len(st.HostIPs))
	for i, h := range st.HostIPs {
		hostIPs[i] = corev1.PodIP(h)
	}
	errs = append(errs, validateIPList(hostIPs, st.HostIP, statusPath, "hostIP", "hostIPs")...)
	return errs
}

func validateIPList(ips []corev1.PodIP, primary string, fldPath *field.Path, single, plural string) field.ErrorList {
	var errs field.ErrorList
	if len(ips) > 2 {
		errs = append(errs, field.TooMany(fldPath.Child(plural), len(ips), 2))
	}
	seen := sets.New[string]()
	for i, ip := range ips {
		errs = append(errs, validateIP(ip.IP, fldPath.Child(plural).Index(i).Child("ip"))...)
		if seen.Has(ip.IP) {
			errs = append(errs, field.Duplicate(fldPath.Child(plural).Index(i).Child("ip"), ip.IP))
		}
		seen.Insert(ip.IP)
	}
	if primary != "" && (len(ips) == 0 || ips[0].IP != primary) {
		errs = append(errs, field.Invalid(fldPath.Child(single), primary, fmt.Sprintf("must match `%s[0]`", plural)))
	}
	return errs
}

// validatePodSpec checks a pod spec, shared by pods and pod templates.
func validatePodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	volumes, errs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	names := sets.New[string]()
	errs = append(errs, validateInitContainers(spec.InitContainers, volumes, names, spec, fldPath.Child("initContainers"))...)
	errs = append(errs, validateContainers(spec.Containers, volumes, names, spec, fldPath.Child("containers"))...)
	errs = append(errs, validateEphemeralContainers(spec.EphemeralContainers, volumes, names, spec, fldPath.Child("ephemeralContainers"))...)
	errs = append(errs, validateEnum(spec.RestartPolicy, fldPath.Child("restartPolicy"), corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	errs = append(errs, validateEnum(spec.DNSPolicy, fldPath.Child("dnsPolicy"), corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone)...)
	if spec.DNSPolicy == corev1.DNSNone && spec.DNSConfig == nil {
		errs = append(errs, field.Required(fldPath.Child("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
	}
	errs = append(errs, validateDNSConfig(spec.DNSConfig, fldPath.Child("dnsConfig"))...)
	errs = append(errs, validateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	if spec.ServiceAccountName != "" {
		errs = append(errs, validateDNS1123Subdomain(spec.ServiceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	if spec.NodeName != "" {
		errs = append(errs, validateDNS1123Subdomain(spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		errs = append(errs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, validateDNS1123Subdomain(spec.PriorityClassName, fldPath.Child("priorityClassName"))...)
	}
	if spec.SchedulerName != "" {
		errs = append(errs, validateDNS1123Subdomain(spec.SchedulerName, fldPath.Child("schedulerName"))...)
	}
	errs = append(errs, ValidateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	errs = append(errs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validatePodSecurityContext(spec, fldPath.Child("securityContext"))...)
	errs = append(errs, validateTopologySpread(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	for i, alias := range spec.HostAliases {
		p := fldPath.Child("hostAliases").Index(i)
		errs = append(errs, validateIP(alias.IP, p.Child("ip"))...)
		for j, h := range alias.Hostnames {
			errs = append(errs, validateDNS1123Subdomain(h, p.Child("hostnames").Index(j))...)
		}
	}
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	for i, g := range spec.SchedulingGates {
		errs = append(errs, validateQualifiedName(g.Name, fldPath.Child("schedulingGates").Index(i).Child("name"))...)
	}
	if spec.OS != nil {
		if spec.OS.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("os", "name"), "cannot be empty"))
		} else {
			errs = append(errs, validateEnum(spec.OS.Name, fldPath.Child("os"), corev1.Linux, corev1.Windows)...)
		}
	}
	errs = append(errs, validateHostNetworkPorts(spec, fldPath)...)
	return errs
}

func validateDNSConfig(cfg *corev1.PodDNSConfig, fldPath *field.Path) field.ErrorList {
	if cfg == nil {
		return nil
	}
	var errs field.ErrorList
	if len(cfg.Nameservers) > 3 {
		errs = append(errs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validateIP(ns, fldPath.Child("nameservers").Index(i))...)
	}
	if len(cfg.Searches) > 32 {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, "must not have more than 32 search paths"))
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "Option.Name must not be empty"))
		}
	}
	return errs
}

func validateHostNetworkPorts(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	check := func(containers []corev1.Container, p *field.Path) {
		for i, c := range containers {
			for j, port := range c.Ports {
				if port.HostPort != port.ContainerPort {
					errs = append(errs, field.Invalid(p.Index(i).Child("ports").Index(j).Child("containerPort"), port.ContainerPort, "must match `hostPort` when `hostNetwork` is true"))
				}
			}
		}
	}
	check(spec.InitContainers, fldPath.Child("initContainers"))
	check(spec.Containers, fldPath.Child("containers"))
	return errs
}

func validateContainerName(name string, seen sets.Set[string], fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	errs := validateDNS1123Label(name, fldPath)
	if seen.Has(name) {
		errs = append(errs, field.Duplicate(fldPath, name))
	}
	seen.Insert(name)
	return errs
}

func validateContainers(containers []corev1.Container, volumes map[string]corev1.VolumeSource, names sets.Set[string], spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerName(c.Name, names, p.Child("name"))...)
		errs = append(errs, validateContainerCommon(c, volumes, spec, p)...)
		errs = append(errs, validateProbe(c.LivenessProbe, p.Child("livenessProbe"), true)...)
		errs = append(errs, validateProbe(c.ReadinessProbe, p.Child("readinessProbe"), false)...)
		errs = append(errs, validateProbe(c.StartupProbe, p.Child("startupProbe"), true)...)
		errs = append(errs, validateLifecycle(c.Lifecycle, p.Child("lifecycle"))...)
		errs = append(errs, validateResizePolicy(c.ResizePolicy, spec.RestartPolicy, p.Child("resizePolicy"))...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	return errs
}

func validateInitContainers(containers []corev1.Container, volumes map[string]corev1.VolumeSource, names sets.Set[string], spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerName(c.Name, names, p.Child("name"))...)
		errs = append(errs, validateContainerCommon(c, volumes, spec, p)...)
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if c.RestartPolicy != nil && !sidecar {
			errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []string{string(corev1.ContainerRestartPolicyAlways)}))
		}
		if sidecar {
			errs = append(errs, validateProbe(c.LivenessProbe, p.Child("livenessProbe"), true)...)
			errs = append(errs, validateProbe(c.ReadinessProbe, p.Child("readinessProbe"), false)...)
			errs = append(errs, validateProbe(c.StartupProbe, p.Child("startupProbe"), true)...)
			errs = append(errs, validateLifecycle(c.Lifecycle, p.Child("lifecycle"))...)
			errs = append(errs, validateResizePolicy(c.ResizePolicy, spec.RestartPolicy, p.Child("resizePolicy"))...)
			continue
		}
		for _, forbidden := range []struct {
			name string
			set  bool
		}{
			{"lifecycle", c.Lifecycle != nil},
			{"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil},
			{"startupProbe", c.StartupProbe != nil},
		} {
			if forbidden.set {
				errs = append(errs, field.Forbidden(p.Child(forbidden.name), "may not be set for init containers without restartPolicy=Always"))
			}
		}
	}
	return errs
}

func validateContainerCommon(c *corev1.Container, volumes map[string]corev1.VolumeSource, spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	errs = append(errs, validateEnum(c.ImagePullPolicy, p.Child("imagePullPolicy"), corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	errs = append(errs, validateEnum(c.TerminationMessagePolicy, p.Child("terminationMessagePolicy"), corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError)...)
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, p.Child("volumeMounts"))...)
	for i, d := range c.VolumeDevices {
		dp := p.Child("volumeDevices").Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(dp.Child("name"), ""))
		} else if _, ok := volumes[d.Name]; !ok {
			errs = append(errs, field.NotFound(dp.Child("name"), d.Name))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(dp.Child("devicePath"), ""))
		}
	}
	errs = append(errs, ValidateResourceRequirements(&c.Resources, p.Child("resources"))...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, p.Child("securityContext"))...)
	return errs
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		if port.HostIP != "" {
			errs = append(errs, validateIP(port.HostIP, p.Child("hostIP"))...)
		}
		errs = append(errs, validateEnum(port.Protocol, p.Child("protocol"), corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP)...)
	}
	return errs
}

func validateEnv(env []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		p := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarSource(ev, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarSource(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	src := ev.ValueFrom
	if src == nil {
		return nil
	}
	var errs field.ErrorList
	set := 0
	if src.FieldRef != nil {
		set++
		errs = append(errs, validateObjectFieldSelector(src.FieldRef, fldPath.Child("fieldRef"))...)
	}
	if src.ResourceFieldRef != nil {
		set++
		if src.ResourceFieldRef.Resource == "" {
			errs = append(errs, field.Required(fldPath.Child("resourceFieldRef", "resource"), ""))
		}
	}
	if src.ConfigMapKeyRef != nil {
		set++
		errs = append(errs, validateKeySelector(src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if src.SecretKeyRef != nil {
		set++
		errs = append(errs, validateKeySelector(src.SecretKeyRef.Name, src.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if src.FileKeyRef != nil {
		set++
	}
	switch {
	case set == 0:
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case set > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	}
	return errs
}

func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), key, msg))
		}
	}
	return errs
}

// validPodFieldPaths are the pod fields the downward API exposes through env fieldRef.
var validPodFieldPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

func validateObjectFieldSelector(sel *corev1.ObjectFieldSelector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sel.APIVersion == "" {
		errs = append(errs, field.Required(fldPath.Child("apiVersion"), ""))
	}
	if sel.FieldPath == "" {
		return append(errs, field.Required(fldPath.Child("fieldPath"), ""))
	}
	fp := sel.FieldPath
	if strings.HasPrefix(fp, "metadata.labels[") || strings.HasPrefix(fp, "metadata.annotations[") {
		return errs
	}
	if fp == "metadata.labels" || fp == "metadata.annotations" || slices.Contains(validPodFieldPaths, fp) {
		return errs
	}
	return append(errs, field.NotSupported(fldPath.Child("fieldPath"), fp, validPodFieldPaths))
}

func validateEnvFrom(envFrom []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ef := range envFrom {
		p := fldPath.Index(i)
		if ef.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ef.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), ef.Prefix, msg))
			}
		}
		set := 0
		if ef.ConfigMapRef != nil {
			set++
			if ef.ConfigMapRef.Name == "" {
				errs = append(errs, field.Required(p.Child("configMapRef", "name"), ""))
			}
		}
		if ef.SecretRef != nil {
			set++
			if ef.SecretRef.Name == "" {
				errs = append(errs, field.Required(p.Child("secretRef", "name"), ""))
			}
		}
		switch {
		case set == 0:
			errs = append(errs, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
		case set > 1:
			errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		p := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if _, ok := volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		} else if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, p.Child("subPath"))...)
		}
		if m.SubPath != "" && m.SubPathExpr != "" {
			errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
		}
		if m.MountPropagation != nil {
			errs = append(errs, validateEnum(*m.MountPropagation, p.Child("mountPropagation"), corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone)...)
		}
	}
	return errs
}

// validateLocalDescendingPath: a relative path that cannot climb out of its root.
func validateLocalDescendingPath(target string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(fldPath, target, "must be a relative path"))
	}
	for _, part := range strings.Split(target, "/") {
		if part == ".." {
			errs = append(errs, field.Invalid(fldPath, target, "must not contain '..'"))
			break
		}
	}
	return errs
}

// ValidateResourceRequirements checks a container's resources: names, quantities and requests not
// above limits.
func ValidateResourceRequirements(req *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	hasCPUOrMemory, hasHugePages := false, false
	for _, name := range sortedResourceNames(req.Limits) {
		q := req.Limits[name]
		p := limPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(string(name), p)...)
		errs = append(errs, validateResourceQuantityValue(string(name), q, p)...)
		hasCPUOrMemory = hasCPUOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hasHugePages = hasHugePages || isHugePageResource(string(name))
	}
	for _, name := range sortedResourceNames(req.Requests) {
		q := req.Requests[name]
		p := reqPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(string(name), p)...)
		errs = append(errs, validateResourceQuantityValue(string(name), q, p)...)
		limit, hasLimit := req.Limits[name]
		switch {
		case hasLimit && q.Cmp(limit) != 0 && !isOvercommitAllowed(string(name)):
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case hasLimit && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !hasLimit && !isOvercommitAllowed(string(name)):
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		hasCPUOrMemory = hasCPUOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hasHugePages = hasHugePages || isHugePageResource(string(name))
	}
	if hasHugePages && !hasCPUOrMemory {
		errs = append(errs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return errs
}

func validateProbe(probe *corev1.Probe, fldPath *field.Path, successMustBeOne bool) field.ErrorList {
	if probe == nil {
		return nil
	}
	errs := validateProbeHandler(&probe.ProbeHandler, fldPath)
	errs = append(errs, validateNonnegativeInt(int64(probe.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	errs = append(errs, validateNonnegativeInt(int64(probe.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	errs = append(errs, validateNonnegativeInt(int64(probe.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	errs = append(errs, validateNonnegativeInt(int64(probe.SuccessThreshold), fldPath.Child("successThreshold"))...)
	errs = append(errs, validateNonnegativeInt(int64(probe.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if successMustBeOne && probe.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), probe.SuccessThreshold, "must be 1"))
	}
	if probe.TerminationGracePeriodSeconds != nil && *probe.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *probe.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return errs
}

func validateProbeHandler(h *corev1.ProbeHandler, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := 0
	checkOne := func(name string, present bool, validate func(*field.Path) field.ErrorList) {
		if !present {
			return
		}
		if set > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
		} else {
			errs = append(errs, validate(fldPath.Child(name))...)
		}
		set++
	}
	checkOne("exec", h.Exec != nil, func(p *field.Path) field.ErrorList { return validateExec(h.Exec, p) })
	checkOne("httpGet", h.HTTPGet != nil, func(p *field.Path) field.ErrorList { return validateHTTPGet(h.HTTPGet, p) })
	checkOne("tcpSocket", h.TCPSocket != nil, func(p *field.Path) field.ErrorList { return validatePortNumOrName(h.TCPSocket.Port, p.Child("port")) })
	checkOne("grpc", h.GRPC != nil, func(p *field.Path) field.ErrorList {
		var e field.ErrorList
		for _, msg := range validation.IsValidPortNum(int(h.GRPC.Port)) {
			e = append(e, field.Invalid(p.Child("port"), h.GRPC.Port, msg))
		}
		return e
	})
	if set == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	}
	return errs
}

func validateLifecycle(lc *corev1.Lifecycle, fldPath *field.Path) field.ErrorList {
	if lc == nil {
		return nil
	}
	var errs field.ErrorList
	for _, hook := range []struct {
		name string
		h    *corev1.LifecycleHandler
	}{{"postStart", lc.PostStart}, {"preStop", lc.PreStop}} {
		name, h := hook.name, hook.h
		if h == nil {
			continue
		}
		p := fldPath.Child(name)
		set := 0
		if h.Exec != nil {
			set++
			errs = append(errs, validateExec(h.Exec, p.Child("exec"))...)
		}
		if h.HTTPGet != nil {
			set++
			errs = append(errs, validateHTTPGet(h.HTTPGet, p.Child("httpGet"))...)
		}
		if h.TCPSocket != nil {
			set++
			errs = append(errs, validatePortNumOrName(h.TCPSocket.Port, p.Child("tcpSocket", "port"))...)
		}
		if h.Sleep != nil {
			set++
			if h.Sleep.Seconds < 0 {
				errs = append(errs, field.Invalid(p.Child("sleep", "seconds"), h.Sleep.Seconds, msgNegative))
			}
		}
		if set == 0 {
			errs = append(errs, field.Required(p, "must specify a handler type"))
		} else if set > 1 {
			errs = append(errs, field.Forbidden(p, "may not specify more than 1 handler type"))
		}
	}
	return errs
}

func validateExec(e *corev1.ExecAction, fldPath *field.Path) field.ErrorList {
	if len(e.Command) == 0 {
		return field.ErrorList{field.Required(fldPath.Child("command"), "")}
	}
	return nil
}

func validateHTTPGet(h *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	errs = append(errs, validateEnum(h.Scheme, fldPath.Child("scheme"), corev1.URISchemeHTTP, corev1.URISchemeHTTPS)...)
	for i, header := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(header.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("httpHeaders").Index(i).Child("name"), header.Name, msg))
		}
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

// ValidateTolerations checks pod tolerations.
func ValidateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, validateQualifiedName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
		}
		if t.Effect != "" {
			errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		}
	}
	return errs
}

func validateTaintEffect(effect corev1.TaintEffect, fldPath *field.Path) field.ErrorList {
	return validateEnum(effect, fldPath, corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)
}

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			errs = append(errs, ValidateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if term.Weight <= 0 || term.Weight > 100 {
				errs = append(errs, field.Invalid(tp.Child("weight"), term.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, validateNodeSelectorTerm(term.Preference, tp.Child("preference"))...)
		}
	}
	errs = append(errs, validatePodAffinityTerms(a.PodAffinity, fldPath.Child("podAffinity"))...)
	errs = append(errs, validatePodAffinityTerms((*corev1.PodAffinity)(a.PodAntiAffinity), fldPath.Child("podAntiAffinity"))...)
	return errs
}

func validatePodAffinityTerms(pa *corev1.PodAffinity, fldPath *field.Path) field.ErrorList {
	if pa == nil {
		return nil
	}
	var errs field.ErrorList
	for i, term := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
		errs = append(errs, validatePodAffinityTerm(term, fldPath.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
		p := fldPath.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if w.Weight <= 0 || w.Weight > 100 {
			errs = append(errs, field.Invalid(p.Child("weight"), w.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validatePodAffinityTerm(w.PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return errs
}

func validatePodAffinityTerm(term corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	errs := validateLabelSelector(term.LabelSelector, fldPath.Child("labelSelector"))
	errs = append(errs, validateLabelSelector(term.NamespaceSelector, fldPath.Child("namespaceSelector"))...)
	for _, ns := range term.Namespaces {
		errs = append(errs, validateDNS1123Label(ns, fldPath.Child("namespace"))...)
	}
	if term.TopologyKey == "" {
		errs = append(errs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	} else {
		errs = append(errs, validateQualifiedName(term.TopologyKey, fldPath.Child("topologyKey"))...)
	}
	return errs
}

// ValidateNodeSelector checks a required node selector (node affinity, PV node affinity).
func ValidateNodeSelector(sel *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	if len(sel.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(fldPath.Child("nodeSelectorTerms"), "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range sel.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(term, fldPath.Child("nodeSelectorTerms").Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, req := range term.MatchExpressions {
		p := fldPath.Child("matchExpressions").Index(i)
		errs = append(errs, validateNodeSelectorRequirementValues(req, p)...)
		errs = append(errs, validateQualifiedName(req.Key, p.Child("key"))...)
	}
	for i, req := range term.MatchFields {
		p := fldPath.Child("matchFields").Index(i)
		if req.Key != metav1.ObjectNameField {
			errs = append(errs, field.NotSupported(p.Child("key"), req.Key, []string{metav1.ObjectNameField}))
		}
		switch req.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(req.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
		}
	}
	return errs
}

func validateNodeSelectorRequirementValues(req corev1.NodeSelectorRequirement, fldPath *field.Path) field.ErrorList {
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'")}
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(req.Values) > 0 {
			return field.ErrorList{field.Forbidden(fldPath.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")}
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(req.Values) != 1 {
			return field.ErrorList{field.Required(fldPath.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'")}
		}
	default:
		return field.ErrorList{field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator")}
	}
	return nil
}

func validateTopologySpread(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range constraints {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []string{string(corev1.DoNotSchedule), string(corev1.ScheduleAnyway)}))
		}
		for _, rest := range constraints[i+1:] {
			if rest.TopologyKey == c.TopologyKey && rest.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		errs = append(errs, validateLabelSelector(c.LabelSelector, p.Child("labelSelector"))...)
	}
	return errs
}

func validatePodSecurityContext(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, validateID(sc.RunAsUser, validation.IsValidUserID, fldPath.Child("runAsUser"))...)
	errs = append(errs, validateID(sc.RunAsGroup, validation.IsValidGroupID, fldPath.Child("runAsGroup"))...)
	errs = append(errs, validateID(sc.FSGroup, validation.IsValidGroupID, fldPath.Child("fsGroup"))...)
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, validateID(&g, validation.IsValidGroupID, fldPath.Child("supplementalGroups").Index(i))...)
	}
	if sc.FSGroupChangePolicy != nil {
		errs = append(errs, validateEnum(*sc.FSGroupChangePolicy, fldPath.Child("fsGroupChangePolicy"), corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways)...)
	}
	errs = append(errs, validateSysctls(sc.Sysctls, spec.HostNetwork, spec.HostIPC, fldPath.Child("sysctls"))...)
	return errs
}

// sysctlNameRegexp is Kubernetes' sysctl name rule: segments of lower-case
// alphanumerics, '-' and '_' (not at the ends), separated by '.' or '/'.
var sysctlNameRegexp = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`) //nolint:gochecknoglobals // compiled once, never written.

const sysctlMaxLength = 253

// validateSysctls checks names as Kubernetes does: valid and unique, and no
// sysctl of a namespace the pod shares with the host (net.* with
// hostNetwork; kernel.sem, kernel.shm*, kernel.msg*, fs.mqueue.* with hostIPC).
func validateSysctls(sysctls []corev1.Sysctl, hostNetwork, hostIPC bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, s := range sysctls {
		p := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlNameRegexp.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameRegexp)))
		case names[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		names[s.Name] = true
		switch name := sysctl.Normalize(s.Name); {
		case hostNetwork && sysctl.NamespaceOf(name) == sysctl.Net:
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case hostIPC && sysctl.NamespaceOf(name) == sysctl.IPC:
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	return errs
}

func validateID(id *int64, check func(int64) []string, fldPath *field.Path) field.ErrorList {
	if id == nil {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range check(*id) {
		errs = append(errs, field.Invalid(fldPath, *id, msg))
	}
	return errs
}

func validateSecurityContext(sc *corev1.SecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, validateID(sc.RunAsUser, validation.IsValidUserID, fldPath.Child("runAsUser"))...)
	errs = append(errs, validateID(sc.RunAsGroup, validation.IsValidGroupID, fldPath.Child("runAsGroup"))...)
	if sc.ProcMount != nil {
		errs = append(errs, validateEnum(*sc.ProcMount, fldPath.Child("procMount"), corev1.DefaultProcMount, corev1.UnmaskedProcMount)...)
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return errs
}
