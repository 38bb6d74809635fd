package kubelet

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/sysctl"
)

// Admission reasons as Kubernetes' kubelet writes them into a rejected pod's
// status.reason.
const (
	// reasonSysctlForbidden is the sysctl admission handler's reason.
	reasonSysctlForbidden = "SysctlForbidden"
	// reasonNodePorts is the predicate admission handler's reason for a host
	// port conflict: the name of the scheduler's NodePorts filter.
	reasonNodePorts = "NodePorts"
	// reasonPodOSSelector and reasonPodOSNotSupported are the predicate handler's reasons for a
	// pod meant for another operating system: by its kubernetes.io/os label, or by spec.os.
	reasonPodOSSelector     = "PodOSSelectorNodeLabelDoesNotMatch"
	reasonPodOSNotSupported = "PodOSNotSupported"
	// nodePortsDesc is that filter's failure description.
	nodePortsDesc = "node(s) didn't have free ports for the requested pod ports"
)

// safeSysctls are the sysctls Kubernetes' kubelet allows every pod: each is
// namespaced to the pod and has no effect on other pods on the node. The
// upstream list gates a few on a kernel version (up to 4.15 for tcp_rmem and
// tcp_wmem); skiff needs a newer kernel anyway, so there is no gate.
func safeSysctls() []string {
	return []string{
		"kernel.shm_rmid_forced",
		"net.ipv4.ip_local_port_range",
		"net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range",
		"net.ipv4.ip_unprivileged_port_start",
		"net.ipv4.ip_local_reserved_ports",
		"net.ipv4.tcp_keepalive_time",
		"net.ipv4.tcp_fin_timeout",
		"net.ipv4.tcp_keepalive_intvl",
		"net.ipv4.tcp_keepalive_probes",
		"net.ipv4.tcp_rmem",
		"net.ipv4.tcp_wmem",
	}
}

// sysctlAllowlist holds the sysctls pods may set: exact names and prefixes
// (patterns ending in "*"), each with its namespace.
type sysctlAllowlist struct {
	names    map[string]sysctl.Namespace
	prefixes map[string]sysctl.Namespace
}

// newSysctlAllowlist returns the safe sysctls plus allowedUnsafe (the
// --allowed-unsafe-sysctls names and patterns); an unsafe sysctl that is not
// namespaced cannot be allowed, since it would change the node for every pod.
func newSysctlAllowlist(allowedUnsafe []string) (sysctlAllowlist, error) {
	w := sysctlAllowlist{names: map[string]sysctl.Namespace{}, prefixes: map[string]sysctl.Namespace{}}
	for _, s := range append(safeSysctls(), allowedUnsafe...) {
		s = sysctl.Normalize(s)
		ns := sysctl.NamespaceOf(s)
		if ns == "" {
			return sysctlAllowlist{}, fmt.Errorf("the sysctl %q is not known to be namespaced", s)
		}
		if prefix, ok := strings.CutSuffix(s, "*"); ok {
			if strings.Contains(prefix, "*") {
				return sysctlAllowlist{}, fmt.Errorf("sysctl pattern %q: only a trailing '*' is allowed", s)
			}
			w.prefixes[prefix] = ns
			continue
		}
		if !isValidSysctlName(s) {
			return sysctlAllowlist{}, fmt.Errorf("sysctl %q is not a valid sysctl name", s)
		}
		w.names[s] = ns
	}
	return w, nil
}

// ValidateAllowedUnsafeSysctls reports why an --allowed-unsafe-sysctls list
// cannot be used, so a node refuses it before it starts.
func ValidateAllowedUnsafeSysctls(allowed []string) error {
	_, err := newSysctlAllowlist(allowed)
	return err
}

// check reports why a pod may not set sysctl, or nil: it must be allowlisted,
// and a namespaced sysctl is refused when the pod shares that namespace with
// the host.
func (w sysctlAllowlist) check(name string, hostNet, hostIPC bool) error {
	name = sysctl.Normalize(name)
	ns, found := w.names[name]
	if !found {
		for prefix, pns := range w.prefixes {
			if strings.HasPrefix(name, prefix) {
				ns, found = pns, true
				break
			}
		}
	}
	if !found {
		return fmt.Errorf("%q not allowlisted", name)
	}
	if (ns == sysctl.IPC && hostIPC) || (ns == sysctl.Net && hostNet) {
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

// isValidSysctlName is the API's rule for sysctl names: dot- or
// slash-separated segments of lower-case alphanumerics, '-' and '_', at most
// 253 characters.
func isValidSysctlName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, seg := range strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == '/' }) {
		if !validSysctlSegment(seg) {
			return false
		}
	}
	// FieldsFunc drops empty segments: "a..b", ".a" and "a/" are invalid.
	return !strings.Contains(name, "..") && !strings.Contains(name, "//") && !strings.Contains(name, "./") && !strings.Contains(name, "/.") &&
		!strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "/") && !strings.HasSuffix(name, ".") && !strings.HasSuffix(name, "/")
}

func validSysctlSegment(seg string) bool {
	for i, r := range seg {
		alnum := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		edge := i == 0 || i == len(seg)-1
		if !alnum && (edge || (r != '-' && r != '_')) {
			return false
		}
	}
	return seg != ""
}

// admitResult is the kubelet's admission decision for a pod.
type admitResult struct {
	admit   bool
	reason  string
	message string
}

// admitPod decides whether the node runs pod, given the pods it admitted
// before (running or about to run) and the node's allocatable resources (nil
// before the node's first status: not checked): it must be meant for this
// node's operating system, its sysctls must be allowed, its host ports free and
// its requests fit beside the admitted pods'. Like Kubernetes' kubelet, a
// rejected pod is not retried: it fails, and its controller makes a new one.
func admitPod(pod *corev1.Pod, admitted []*corev1.Pod, allocatable corev1.ResourceList, sysctls sysctlAllowlist) admitResult {
	// The node's OS is the kubelet's own (its kubernetes.io/os label says the same), checked
	// first, as upstream: preemption could not help.
	if os, ok := pod.Labels[corev1.LabelOSStable]; ok && os != runtime.GOOS {
		return admitResult{reason: reasonPodOSSelector, message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != runtime.GOOS {
		return admitResult{reason: reasonPodOSNotSupported, message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			if err := sysctls.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
				return admitResult{reason: reasonSysctlForbidden, message: fmt.Sprintf("forbidden sysctl: %v", err)}
			}
		}
	}
	var used []corev1.ContainerPort
	for _, other := range admitted {
		if other.UID != pod.UID {
			used = append(used, podHostPorts(other)...)
		}
	}
	for _, want := range podHostPorts(pod) {
		if slices.ContainsFunc(used, func(u corev1.ContainerPort) bool { return hostPortsConflict(want, u) }) {
			return admitResult{reason: reasonNodePorts, message: fmt.Sprintf("Predicate %s failed: %s", reasonNodePorts, nodePortsDesc)}
		}
	}
	if len(allocatable) > 0 {
		if r := fitsResources(pod, admitted, allocatable); !r.admit {
			return r
		}
	}
	return admitResult{admit: true}
}

// fitsResources is the kubelet's resource check of a pod bound past the scheduler (a nodeName
// set by hand, a binding made without it): the node's pod count, then each resource the pod
// requests, against allocatable less what the admitted pods request. The reason is Kubernetes'
// OutOf<resource> ("OutOfcpu", "OutOfpods").
func fitsResources(pod *corev1.Pod, admitted []*corev1.Pod, allocatable corev1.ResourceList) admitResult {
	capacity := framework.NewResource(allocatable)
	used := &framework.Resource{}
	others := int64(0)
	for _, other := range admitted {
		if other.UID == pod.UID {
			continue
		}
		others++
		used.AddResource(framework.PodSpecRequests(other, false), 1)
	}
	if capacity.AllowedPodNumber > 0 && others+1 > capacity.AllowedPodNumber {
		return admitResult{reason: "OutOfpods", message: fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", others, capacity.AllowedPodNumber)}
	}
	want := framework.PodSpecRequests(pod, false)
	// Extended resources the node's status carries come from elsewhere (device plugins, a patch
	// of the Node): the scheduler counts those; the kubelet checks what it reports itself.
	for name := range want.ScalarResources {
		if _, ok := allocatable[name]; !ok {
			delete(want.ScalarResources, name)
		}
	}
	if w, u, c := want.EphemeralStorage, used.EphemeralStorage, capacity.EphemeralStorage; w > 0 && w+u > c {
		return admitResult{reason: "OutOfephemeral-storage", message: fmt.Sprintf("Node didn't have enough resource: ephemeral-storage, requested: %d, used: %d, capacity: %d", w, u, c)}
	}
	if msg := insufficient(want, used, capacity); msg != "" {
		name := strings.TrimPrefix(msg, "Node didn't have enough resource: ")
		name = name[:strings.Index(name, ",")]
		return admitResult{reason: "OutOf" + name, message: msg}
	}
	return admitResult{admit: true}
}

// podHostPorts lists the host ports a pod's containers (and its sidecar
// init containers, which run alongside them) take on the node.
func podHostPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	add := func(cs []corev1.Container, onlySidecars bool) {
		for i := range cs {
			if onlySidecars && !isSidecar(&cs[i]) {
				continue
			}
			for _, p := range cs[i].Ports {
				if p.HostPort > 0 {
					out = append(out, p)
				}
			}
		}
	}
	add(pod.Spec.InitContainers, true)
	add(pod.Spec.Containers, false)
	return out
}

// hostPortsConflict: the same protocol and port on the same address, or on
// any address when either side binds all of them.
func hostPortsConflict(a, b corev1.ContainerPort) bool {
	norm := func(p corev1.ContainerPort) (string, corev1.Protocol) {
		ip, proto := p.HostIP, p.Protocol
		if ip == "" || ip == "::" {
			ip = "0.0.0.0"
		}
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		return ip, proto
	}
	aIP, aProto := norm(a)
	bIP, bProto := norm(b)
	if a.HostPort != b.HostPort || aProto != bProto {
		return false
	}
	return aIP == bIP || aIP == "0.0.0.0" || bIP == "0.0.0.0"
}

// isSidecar reports whether an init container is a sidecar: it keeps running
// next to the regular containers.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// admit runs admission once per pod; it reports whether the pod may run. A
// pod the runtime already has (a restarted kubelet adopting it) or one whose
// status shows it ran is admitted as it is: rejecting it now would kill a
// running workload. The decision and the record of it happen under one lock,
// so two pods that want the same host port cannot both get in.
func (k *Kubelet) admit(ctx context.Context, pod *corev1.Pod, state *podRuntimeState) (bool, error) {
	k.mu.Lock()
	decided, ok := k.admitted[pod.UID]
	if ok {
		k.mu.Unlock()
		return decided, nil
	}
	result := admitResult{admit: true}
	if len(state.sandboxes) == 0 && len(state.containers) == 0 && pod.Status.StartTime == nil {
		result = admitPod(pod, k.activeOthersLocked(pod.UID), k.nodes.currentAllocatable(), k.sysctls)
	}
	k.admitted[pod.UID] = result.admit
	k.mu.Unlock()
	if result.admit {
		return true, nil
	}
	k.log.Info("pod rejected by admission", "pod", pod.Namespace+"/"+pod.Name, "reason", result.reason, "message", result.message)
	k.recorder.Event(pod, corev1.EventTypeWarning, result.reason, result.message)
	return false, k.rejectPod(ctx, pod, result)
}

// activeOthersLocked lists the pods other than uid that the node admitted and that still run (or
// are about to): what a new pod, or a pod's resize, must fit beside. k.mu is held.
func (k *Kubelet) activeOthersLocked(uid types.UID) []*corev1.Pod {
	var others []*corev1.Pod
	for other, entry := range k.pods {
		// Before a restarted kubelet has synced every pod, a pod that ran
		// already counts as admitted.
		admitted, known := k.admitted[other]
		if other != uid && entry.pod != nil && (admitted || (!known && entry.pod.Status.StartTime != nil)) && !entry.deleted && entry.pod.DeletionTimestamp == nil &&
			entry.pod.Status.Phase != corev1.PodSucceeded && entry.pod.Status.Phase != corev1.PodFailed {
			others = append(others, entry.pod)
		}
	}
	return others
}

// rejectPod writes a rejected pod's final status as Kubernetes' kubelet does:
// Failed with the admission reason; conditions the kubelet does not own
// (PodScheduled) are kept.
func (k *Kubelet) rejectPod(ctx context.Context, pod *corev1.Pod, result admitResult) error {
	status := corev1.PodStatus{
		Phase:    corev1.PodFailed,
		Reason:   result.reason,
		Message:  "Pod was rejected: " + result.message,
		QOSClass: qosClass(pod),
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled || c.Type == corev1.DisruptionTarget {
			status.Conditions = append(status.Conditions, c)
		}
	}
	updated, err := k.patchPodStatus(ctx, pod, status)
	if err != nil {
		// Decide again on the next sync, after the status is written.
		k.mu.Lock()
		delete(k.admitted, pod.UID)
		k.mu.Unlock()
		return fmt.Errorf("reject pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	k.keepNewer(updated)
	return nil
}
