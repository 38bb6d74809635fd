package ctrlutil

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// ServiceKeysForPod returns the keys of the Services in pod's namespace whose
// selector matches pod's labels.
func ServiceKeysForPod(lister corelisters.ServiceLister, pod *corev1.Pod) []string {
	services, err := lister.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, svc := range services {
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		if labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			keys = append(keys, svc.Namespace+"/"+svc.Name)
		}
	}
	return keys
}

// ResolveTargetPort finds the pod port a service port targets: a number is
// used as is; a name is looked up among the ports (same protocol) of the
// pod's regular containers, then of its restartable init containers
// (sidecars), which run beside them for the pod's whole life and serve as
// they do. A run-to-completion init container's ports are never a target.
// An unset target port means the service port number.
func ResolveTargetPort(sp *corev1.ServicePort, pod *corev1.Pod) (int32, bool) {
	tp := sp.TargetPort
	switch {
	case tp.Type == intstr.String && tp.StrVal != "":
		if port, ok := namedPort(pod.Spec.Containers, tp.StrVal, sp.Protocol, false); ok {
			return port, true
		}
		return namedPort(pod.Spec.InitContainers, tp.StrVal, sp.Protocol, true)
	case tp.Type == intstr.Int && tp.IntVal != 0:
		return tp.IntVal, true
	default:
		return sp.Port, true
	}
}

// namedPort finds the port called name with protocol among containers; with
// sidecarsOnly, only among restartable init containers.
func namedPort(containers []corev1.Container, name string, protocol corev1.Protocol, sidecarsOnly bool) (int32, bool) {
	for i := range containers {
		c := &containers[i]
		if sidecarsOnly && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
			continue
		}
		for _, p := range c.Ports {
			if p.Name == name && protocolOf(p.Protocol) == protocolOf(protocol) {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

func protocolOf(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// ShouldPodBeInEndpoints is the one rule of which selected pods get an
// endpoint, as Kubernetes' endpoint and EndpointSlice controllers share it: a
// pod without an IP has nothing to publish; a pod in phase Succeeded or
// Failed (an evicted pod is Failed) runs no more and never comes back, so it
// gets no endpoint at all, not even a not-ready one, whatever the Service's
// publishNotReadyAddresses says. A terminating pod (deletionTimestamp set)
// may still serve through its grace period: EndpointSlices always list it
// (terminating, so a proxy may fall back to it), core/v1 Endpoints only when
// the Service publishes not-ready addresses, which is what includeTerminating
// says.
func ShouldPodBeInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}
