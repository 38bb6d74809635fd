package kubelet

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/sysctl"
)

// Labels and annotations the kubelet puts on sandboxes and containers; the
// runtime keeps them, so they are how a (restarted) kubelet knows what is
// what.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
	labelManagedBy     = "skiff.sh/managed-by"
	managedByKubelet   = "kubelet"

	annotationRestartCount = "io.kubernetes.container.restartCount"
	annotationHash         = "io.kubernetes.container.hash"
	// annotationSpecHash is the hash of the container's definition without its resources and
	// resize policy, which a resize changes without replacing the container.
	annotationSpecHash            = "skiff.sh/container-hash-without-resources"
	annotationTerminationMessage  = "io.kubernetes.container.terminationMessagePath"
	annotationContainerKind       = "skiff.sh/container-kind"
	annotationTerminationGrace    = "io.kubernetes.pod.terminationGracePeriod"
	containerKindInit             = "init"
	containerKindRegular          = "regular"
	defaultTerminationMessagePath = "/dev/termination-log"

	// cpu.cfs_period_us the kubelet uses for CPU limits.
	cpuPeriod = 100000
	minShares = 2
	// minQuotaPeriod is the smallest CFS quota the kernel accepts (1 ms).
	minQuota = 1000
)

// Paths the runtime hides from or makes read-only to unprivileged
// containers (the usual container defaults; CRI runtimes expect the kubelet
// to send them).
func defaultMaskedPaths() []string {
	return []string{"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
}

func defaultReadonlyPaths() []string {
	return []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
}

func (k *Kubelet) podsDir() string { return filepath.Join(k.cfg.DataDir, "pods") }

// podLogDir is where the runtime writes the pod's container logs.
func (k *Kubelet) podLogDir(pod *corev1.Pod) string {
	return filepath.Join(k.podsDir(), fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

func podLabels(pod *corev1.Pod) map[string]string {
	return map[string]string{
		labelPodName: pod.Name, labelPodNamespace: pod.Namespace, labelPodUID: string(pod.UID), labelManagedBy: managedByKubelet,
	}
}

// sandboxConfig builds the CRI sandbox config of a pod. It is deterministic
// for a pod and attempt, so the same config can be sent again with every
// CreateContainer.
func (k *Kubelet) sandboxConfig(pod *corev1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	labels := podLabels(pod)
	for key, v := range pod.Labels {
		if _, reserved := labels[key]; !reserved {
			labels[key] = v
		}
	}
	annotations := map[string]string{}
	for key, v := range pod.Annotations {
		annotations[key] = v
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		LogDirectory: k.podLogDir(pod),
		Labels:       labels,
		Annotations:  annotations,
	}
	cfg.DnsConfig, _ = k.podDNS(pod)
	if !pod.Spec.HostNetwork {
		cfg.Hostname = sandboxHostname(pod, k.cfg.ClusterDomain)
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol: criProtocol(p.Protocol), ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP,
			})
		}
	}
	sc := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: podNamespaces(pod)}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			sc.Privileged = true
		}
	}
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: sc}
	if psc := pod.Spec.SecurityContext; psc != nil && len(psc.Sysctls) > 0 {
		cfg.Linux.Sysctls = map[string]string{}
		for _, s := range psc.Sysctls {
			// The runtime writes /proc/sys/<name with dots as slashes>: a
			// slash-separated name must be in dotted form first.
			cfg.Linux.Sysctls[sysctl.Normalize(s.Name)] = s.Value
		}
	}
	return cfg
}

func criProtocol(p corev1.Protocol) runtimeapi.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

func podNamespaces(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// containerHash identifies a container spec; a running container whose
// spec changed (an image update) is restarted.
func containerHash(c *corev1.Container) string {
	data, _ := json.Marshal(c)
	h := fnv.New32a()
	_, _ = h.Write(data)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// containerSpecHash hashes what of a container only a new container can change: everything but its
// resources and resize policy.
func containerSpecHash(c *corev1.Container) string {
	cp := c.DeepCopy()
	cp.Resources, cp.ResizePolicy = corev1.ResourceRequirements{}, nil
	return containerHash(cp)
}

// definitionChanged reports whether a running container no longer matches its definition c (with
// the pod's allocated resources), so that it must be replaced. A container an older kubelet created
// carries only the hash of its whole definition, resources included; they were its allocation.
func definitionChanged(cur *runtimeapi.ContainerStatus, c *corev1.Container) bool {
	if h, ok := cur.Annotations[annotationSpecHash]; ok {
		return h != containerSpecHash(c)
	}
	return cur.Annotations[annotationHash] != containerHash(c)
}

// qosClass classifies a pod by its containers' requests and limits.
func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	all := append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	anySet, guaranteed := false, true
	for _, c := range all {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
				anySet = true
			}
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !anySet:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// linuxResources maps a container's requests and limits to cgroup settings.
func linuxResources(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{CpuShares: minShares}
	cpuRequest, hasRequest := c.Resources.Requests[corev1.ResourceCPU]
	cpuLimit, hasLimit := c.Resources.Limits[corev1.ResourceCPU]
	if !hasRequest && hasLimit {
		cpuRequest, hasRequest = cpuLimit, true
	}
	if hasRequest {
		r.CpuShares = max(cpuRequest.MilliValue()*1024/1000, minShares)
	}
	if hasLimit {
		r.CpuPeriod = cpuPeriod
		r.CpuQuota = max(cpuLimit.MilliValue()*cpuPeriod/1000, minQuota)
	}
	if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = mem.Value()
	}
	r.OomScoreAdj = oomScoreAdj(pod, c, memoryCapacity)
	return r
}

// oomScoreAdj ranks containers for the OOM killer by QoS class, as
// Kubernetes does: guaranteed last, best-effort first, burstable in between
// by memory request.
func oomScoreAdj(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) int64 {
	switch qosClass(pod) {
	case corev1.PodQOSGuaranteed:
		return -997
	case corev1.PodQOSBestEffort:
		return 1000
	}
	request := c.Resources.Requests[corev1.ResourceMemory]
	if memoryCapacity <= 0 {
		return 999
	}
	adj := 1000 - (1000*request.Value())/memoryCapacity
	if adj < 2 {
		adj = 2
	}
	if adj >= 1000 {
		adj = 999
	}
	return adj
}

// imageUser is the user an image runs as (its config's User) as the runtime reports it: a uid, a
// user name that is not a number, or neither, which is root.
type imageUser struct {
	uid  *int64
	name string
}

// needsImageUser says whether c's runAsNonRoot can only be checked against its image's user (it
// asks for a non-root user without naming one).
func needsImageUser(pod *corev1.Pod, c *corev1.Container) bool {
	nonRoot, user := false, false
	if psc := pod.Spec.SecurityContext; psc != nil {
		nonRoot, user = ptr.Deref(psc.RunAsNonRoot, false), psc.RunAsUser != nil
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsNonRoot != nil {
			nonRoot = *csc.RunAsNonRoot
		}
		user = user || csc.RunAsUser != nil
	}
	return nonRoot && !user
}

// securityContext merges pod and container security settings into the CRI
// container security context; image is the image's user, which runAsNonRoot is checked against
// when no runAsUser is given (needsImageUser).
func securityContext(pod *corev1.Pod, c *corev1.Container, image imageUser) (*runtimeapi.LinuxContainerSecurityContext, error) {
	sc := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: podNamespaces(pod)}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	runAsUser := psc.RunAsUser
	if csc.RunAsUser != nil {
		runAsUser = csc.RunAsUser
	}
	runAsGroup := psc.RunAsGroup
	if csc.RunAsGroup != nil {
		runAsGroup = csc.RunAsGroup
	}
	runAsNonRoot := psc.RunAsNonRoot
	if csc.RunAsNonRoot != nil {
		runAsNonRoot = csc.RunAsNonRoot
	}
	if runAsNonRoot != nil && *runAsNonRoot {
		// As Kubernetes' kubelet: the runAsUser given, else the image's user (no user is root).
		who := fmt.Sprintf("(pod: %q, container: %s)", pod.Namespace+"/"+pod.Name, c.Name)
		switch {
		case runAsUser != nil && *runAsUser == 0:
			return nil, fmt.Errorf("container's runAsUser breaks non-root policy %s", who)
		case runAsUser != nil:
		case image.uid == nil && image.name != "":
			return nil, fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", image.name, who)
		case image.uid == nil || *image.uid == 0:
			return nil, fmt.Errorf("container has runAsNonRoot and image will run as root %s", who)
		}
	}
	if runAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *runAsUser}
	}
	if runAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *runAsGroup}
	}
	sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
	if psc.FSGroup != nil {
		sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
	}
	sc.Privileged = csc.Privileged != nil && *csc.Privileged
	sc.ReadonlyRootfs = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem
	sc.NoNewPrivs = csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation
	if caps := csc.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
	if !sc.Privileged {
		sc.MaskedPaths, sc.ReadonlyPaths = defaultMaskedPaths(), defaultReadonlyPaths()
		if csc.ProcMount != nil && *csc.ProcMount == corev1.UnmaskedProcMount {
			sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
		}
	}
	seccomp := psc.SeccompProfile
	if csc.SeccompProfile != nil {
		seccomp = csc.SeccompProfile
	}
	if seccomp != nil {
		switch seccomp.Type {
		case corev1.SeccompProfileTypeRuntimeDefault:
			sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
		case corev1.SeccompProfileTypeLocalhost:
			if seccomp.LocalhostProfile != nil {
				sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *seccomp.LocalhostProfile}
			}
		}
	}
	return sc, nil
}
