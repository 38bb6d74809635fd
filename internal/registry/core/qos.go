package core

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// qosResources are the resources that decide a pod's QoS class.
var qosResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// PodQOSClass computes a pod's quality-of-service class as Kubernetes does: BestEffort when no
// container requests or limits cpu or memory; Guaranteed when every container limits both and
// requests equal limits; Burstable otherwise.
func PodQOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		for _, name := range qosResources {
			if q, ok := c.Resources.Requests[name]; ok && !q.IsZero() {
				addQuantity(requests, name, q)
			}
		}
		limitsFound := 0
		for _, name := range qosResources {
			if q, ok := c.Resources.Limits[name]; ok && !q.IsZero() {
				limitsFound++
				addQuantity(limits, name, q)
			}
		}
		if limitsFound != len(qosResources) {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func addQuantity(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum := list[name]
	sum.Add(q)
	list[name] = sum
}
