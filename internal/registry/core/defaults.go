package core

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Default values Kubernetes applies to core/v1 objects.
const (
	defaultTerminationGracePeriodSeconds = int64(30)
	defaultSchedulerName                 = "default-scheduler"
	defaultTerminationMessagePath        = "/dev/termination-log"
	defaultFileMode                      = int32(0o644) // 420
	defaultSessionAffinityTimeoutSeconds = int32(10800)
	defaultTokenExpirationSeconds        = int64(3600)
)

// RegisterDefaults registers the core/v1 defaulting functions on s, so that decoding, patching and
// server-side apply all default objects the way Kubernetes does.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register core/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&corev1.Pod{}, func(obj interface{}) { DefaultPod(obj.(*corev1.Pod)) })
	s.AddTypeDefaultingFunc(&corev1.PodList{}, func(obj interface{}) {
		for i := range obj.(*corev1.PodList).Items {
			DefaultPod(&obj.(*corev1.PodList).Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&corev1.PodTemplate{}, func(obj interface{}) { DefaultPodTemplateSpec(&obj.(*corev1.PodTemplate).Template) })
	s.AddTypeDefaultingFunc(&corev1.PodTemplateList{}, func(obj interface{}) {
		for i := range obj.(*corev1.PodTemplateList).Items {
			DefaultPodTemplateSpec(&obj.(*corev1.PodTemplateList).Items[i].Template)
		}
	})
	s.AddTypeDefaultingFunc(&corev1.ReplicationController{}, func(obj interface{}) {
		DefaultReplicationController(obj.(*corev1.ReplicationController))
	})
	s.AddTypeDefaultingFunc(&corev1.ReplicationControllerList{}, func(obj interface{}) {
		for i := range obj.(*corev1.ReplicationControllerList).Items {
			DefaultReplicationController(&obj.(*corev1.ReplicationControllerList).Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&corev1.Service{}, func(obj interface{}) { DefaultService(obj.(*corev1.Service)) })
	s.AddTypeDefaultingFunc(&corev1.Namespace{}, func(obj interface{}) { DefaultNamespace(obj.(*corev1.Namespace)) })
	s.AddTypeDefaultingFunc(&corev1.Secret{}, func(obj interface{}) { DefaultSecret(obj.(*corev1.Secret)) })
	s.AddTypeDefaultingFunc(&corev1.Node{}, func(obj interface{}) { DefaultNode(obj.(*corev1.Node)) })
	s.AddTypeDefaultingFunc(&corev1.Endpoints{}, func(obj interface{}) { DefaultEndpoints(obj.(*corev1.Endpoints)) })
	s.AddTypeDefaultingFunc(&corev1.LimitRange{}, func(obj interface{}) { DefaultLimitRange(obj.(*corev1.LimitRange)) })
	s.AddTypeDefaultingFunc(&corev1.ResourceQuota{}, func(obj interface{}) { DefaultResourceQuota(obj.(*corev1.ResourceQuota)) })
	s.AddTypeDefaultingFunc(&corev1.PersistentVolume{}, func(obj interface{}) { DefaultPersistentVolume(obj.(*corev1.PersistentVolume)) })
	s.AddTypeDefaultingFunc(&corev1.PersistentVolumeClaim{}, func(obj interface{}) {
		DefaultPersistentVolumeClaim(obj.(*corev1.PersistentVolumeClaim))
	})
	return nil
}

// DefaultPod applies Kubernetes' pod defaults, including the pod-only ones (enableServiceLinks,
// requests taken from limits, a negative terminationGracePeriodSeconds read as 1).
func DefaultPod(pod *corev1.Pod) {
	DefaultPodSpec(&pod.Spec)
	// Kubernetes' v1 pod conversion turns a negative grace period into 1 on every request, for
	// Pods only (a template keeps what it was given): validation once let negative values in,
	// and the kubelet reads them as "kill at once", so stored pods and new ones alike mean 1 s.
	// Pod update validation already lets a stored negative period come back as 1.
	if p := pod.Spec.TerminationGracePeriodSeconds; p != nil && *p < 0 {
		one := int64(1)
		pod.Spec.TerminationGracePeriodSeconds = &one
	}
	if pod.Spec.EnableServiceLinks == nil {
		enable := corev1.DefaultEnableServiceLinks
		pod.Spec.EnableServiceLinks = &enable
	}
	for i := range pod.Spec.InitContainers {
		defaultRequestsFromLimits(&pod.Spec.InitContainers[i].Resources)
	}
	for i := range pod.Spec.Containers {
		defaultRequestsFromLimits(&pod.Spec.Containers[i].Resources)
	}
	syncStatusIPs(&pod.Status)
}

// syncStatusIPs does what Kubernetes' v1 pod status conversion does on every request: the singular
// podIP and hostIP win over their lists when both are set and disagree (older clients and simple
// kubelets set only the singular field), a list is filled from a lone singular field, and a lone
// list fills the singular field.
func syncStatusIPs(st *corev1.PodStatus) {
	switch {
	case st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP):
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	case st.PodIP == "" && len(st.PodIPs) > 0:
		st.PodIP = st.PodIPs[0].IP
	}
	switch {
	case st.HostIP != "" && (len(st.HostIPs) == 0 || st.HostIPs[0].IP != st.HostIP):
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	case st.HostIP == "" && len(st.HostIPs) > 0:
		st.HostIP = st.HostIPs[0].IP
	}
}

// defaultRequestsFromLimits: a resource with a limit and no request requests its limit.
func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	if len(r.Limits) == 0 {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}

// DefaultPodTemplateSpec applies the pod spec defaults to a workload's pod template.
func DefaultPodTemplateSpec(t *corev1.PodTemplateSpec) { DefaultPodSpec(&t.Spec) }

// DefaultPodSpec applies the defaults shared by pods and pod templates.
func DefaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		period := defaultTerminationGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &period
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = defaultSchedulerName
	}
	// serviceAccount is the deprecated alias of serviceAccountName, which wins when both are set;
	// Kubernetes' v1 conversion fills each from the other on every request, and manifests that
	// name the account only by the old field (the volumesnapshots addon's) rely on it.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range spec.EphemeralContainers {
		ec := &spec.EphemeralContainers[i].EphemeralContainerCommon
		c := corev1.Container(*ec)
		defaultContainer(&c, spec.HostNetwork)
		*ec = corev1.EphemeralContainerCommon(c)
	}
	defaultResourceList(spec.Overhead)
}

func defaultContainer(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = defaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil && h.HTTPGet != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
	defaultResourceList(c.Resources.Limits)
	defaultResourceList(c.Resources.Requests)
}

// imageTag returns the tag the runtime will pull: "latest" when the reference names neither a
// tag nor a digest, "" when it names only a digest.
func imageTag(image string) string {
	name, digest, hasDigest := strings.Cut(image, "@")
	lastSlash := strings.LastIndex(name, "/")
	if colon := strings.LastIndex(name, ":"); colon > lastSlash {
		return name[colon+1:]
	}
	if hasDigest && digest != "" {
		return ""
	}
	return "latest"
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil {
		defaultHTTPGet(p.HTTPGet)
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		service := ""
		p.GRPC.Service = &service
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// defaultResourceList rounds quantities up to milli precision, as Kubernetes does.
func defaultResourceList(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func defaultVolume(v *corev1.Volume) {
	if len(setSources(v.VolumeSource)) == 0 {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	defaultVolumeSource(&v.VolumeSource)
}

func defaultMode(mode **int32) {
	if *mode == nil {
		m := defaultFileMode
		*mode = &m
	}
}

func defaultVolumeSource(src *corev1.VolumeSource) {
	switch {
	case src.HostPath != nil:
		defaultHostPath(src.HostPath)
	case src.Secret != nil:
		defaultMode(&src.Secret.DefaultMode)
	case src.ConfigMap != nil:
		defaultMode(&src.ConfigMap.DefaultMode)
	case src.DownwardAPI != nil:
		defaultMode(&src.DownwardAPI.DefaultMode)
		for i := range src.DownwardAPI.Items {
			if fr := src.DownwardAPI.Items[i].FieldRef; fr != nil && fr.APIVersion == "" {
				fr.APIVersion = "v1"
			}
		}
	case src.Projected != nil:
		defaultMode(&src.Projected.DefaultMode)
		for i := range src.Projected.Sources {
			s := &src.Projected.Sources[i]
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
				exp := defaultTokenExpirationSeconds
				s.ServiceAccountToken.ExpirationSeconds = &exp
			}
			if s.DownwardAPI != nil {
				for j := range s.DownwardAPI.Items {
					if fr := s.DownwardAPI.Items[j].FieldRef; fr != nil && fr.APIVersion == "" {
						fr.APIVersion = "v1"
					}
				}
			}
		}
	case src.ISCSI != nil:
		if src.ISCSI.ISCSIInterface == "" {
			src.ISCSI.ISCSIInterface = "default"
		}
	case src.RBD != nil:
		if src.RBD.RBDPool == "" {
			src.RBD.RBDPool = "rbd"
		}
		if src.RBD.RadosUser == "" {
			src.RBD.RadosUser = "admin"
		}
		if src.RBD.Keyring == "" {
			src.RBD.Keyring = "/etc/ceph/keyring"
		}
	case src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil:
		defaultPVCSpec(&src.Ephemeral.VolumeClaimTemplate.Spec)
	}
}

func defaultHostPath(hp *corev1.HostPathVolumeSource) {
	if hp.Type == nil {
		t := corev1.HostPathUnset
		hp.Type = &t
	}
}

// DefaultService applies Kubernetes' service defaults. Cluster IPs, IP families and node ports
// are the allocator's business, not defaulting.
func DefaultService(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityNone {
		// As Kubernetes' defaulting does: switching affinity off drops its settings, so an
		// update that only sets None is valid (conformance's affinity transition specs do that).
		spec.SessionAffinityConfig = nil
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP &&
		(spec.SessionAffinityConfig == nil || spec.SessionAffinityConfig.ClientIP == nil || spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil) {
		timeout := defaultSessionAffinityTimeoutSeconds
		spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if (spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.Type != corev1.ServiceTypeExternalName && spec.InternalTrafficPolicy == nil {
		policy := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &policy
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		allocate := true
		spec.AllocateLoadBalancerNodePorts = &allocate
	}
	if spec.Type != corev1.ServiceTypeExternalName && spec.IPFamilyPolicy == nil {
		policy := corev1.IPFamilyPolicySingleStack
		spec.IPFamilyPolicy = &policy
	}
}

// DefaultNamespace sets the status phase and the kubernetes.io/metadata.name label.
func DefaultNamespace(ns *corev1.Namespace) {
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	setNamespaceNameLabel(ns)
}

func setNamespaceNameLabel(ns *corev1.Namespace) {
	if ns.Name == "" {
		return
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// DefaultSecret sets the type to Opaque and folds stringData into data (stringData is write-only).
func DefaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	mergeStringData(s)
}

func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// DefaultNode copies capacity into allocatable when allocatable is unset.
func DefaultNode(n *corev1.Node) {
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
	defaultResourceList(n.Status.Capacity)
	defaultResourceList(n.Status.Allocatable)
}

// DefaultEndpoints sets port protocols to TCP.
func DefaultEndpoints(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// DefaultLimitRange fills container defaults: default limit from max, default request from the
// default limit, then from min.
func DefaultLimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		for _, l := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
			defaultResourceList(l)
		}
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = corev1.ResourceList{}
		}
		for name, q := range item.Max {
			if _, ok := item.Default[name]; !ok {
				item.Default[name] = q.DeepCopy()
			}
		}
		for name, q := range item.Default {
			if _, ok := item.DefaultRequest[name]; !ok {
				item.DefaultRequest[name] = q.DeepCopy()
			}
		}
		for name, q := range item.Min {
			if _, ok := item.DefaultRequest[name]; !ok {
				item.DefaultRequest[name] = q.DeepCopy()
			}
		}
	}
}

// DefaultResourceQuota rounds the quota's quantities.
func DefaultResourceQuota(q *corev1.ResourceQuota) {
	defaultResourceList(q.Spec.Hard)
	defaultResourceList(q.Status.Hard)
	defaultResourceList(q.Status.Used)
}

// DefaultPersistentVolume sets phase Pending, reclaim policy Retain and volume mode Filesystem.
func DefaultPersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		mode := corev1.PersistentVolumeFilesystem
		pv.Spec.VolumeMode = &mode
	}
	if pv.Spec.HostPath != nil {
		defaultHostPath(pv.Spec.HostPath)
	}
	defaultResourceList(pv.Spec.Capacity)
}

// DefaultPersistentVolumeClaim sets phase Pending and volume mode Filesystem.
func DefaultPersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	defaultPVCSpec(&pvc.Spec)
}

func defaultPVCSpec(spec *corev1.PersistentVolumeClaimSpec) {
	if spec.VolumeMode == nil {
		mode := corev1.PersistentVolumeFilesystem
		spec.VolumeMode = &mode
	}
	defaultResourceList(spec.Resources.Requests)
	defaultResourceList(spec.Resources.Limits)
}
