package framework

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Default requests assumed for a container that requests no cpu or memory,
// used only for scoring so that such pods still spread (Kubernetes' values).
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// Resource is an amount of schedulable resources.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	AllowedPodNumber int64
	// ScalarResources holds extended resources, hugepages and attachable volumes.
	ScalarResources map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds a ResourceList.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddScalar adds an amount of a scalar resource.
func (r *Resource) AddScalar(name v1.ResourceName, v int64) {
	if r.ScalarResources == nil {
		r.ScalarResources = map[v1.ResourceName]int64{}
	}
	r.ScalarResources[name] += v
}

// AddResource adds another Resource (sign -1 subtracts).
func (r *Resource) AddResource(o *Resource, sign int64) {
	if o == nil {
		return
	}
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += sign * o.AllowedPodNumber
	for k, v := range o.ScalarResources {
		r.AddScalar(k, sign*v)
	}
}

// SetMax raises each amount to at least o's.
func (r *Resource) SetMax(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	for k, v := range o.ScalarResources {
		if v > r.ScalarResources[k] {
			if r.ScalarResources == nil {
				r.ScalarResources = map[v1.ResourceName]int64{}
			}
			r.ScalarResources[k] = v
		}
	}
}

// Clone deep-copies the resource.
func (r *Resource) Clone() *Resource {
	out := r.clone()
	return &out
}

// clone is Clone by value, for the Resources a NodeInfo holds inline.
func (r *Resource) clone() Resource {
	out := *r
	if r.ScalarResources != nil {
		out.ScalarResources = make(map[v1.ResourceName]int64, len(r.ScalarResources))
		for k, v := range r.ScalarResources {
			out.ScalarResources[k] = v
		}
	}
	return out
}

// Get returns the amount of a named resource in its canonical unit
// (millicores for cpu, bytes for memory and storage).
func (r *Resource) Get(name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return r.AllowedPodNumber
	default:
		return r.ScalarResources[name]
	}
}

// IsScalarResourceName reports whether name is an extended resource,
// hugepages or an attachable-volumes resource: the ones Kubernetes counts as scalars.
func IsScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, v1.ResourceHugePagesPrefix) || strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix) {
		return true
	}
	domain, _, ok := strings.Cut(s, "/")
	if !ok || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	// Extended resources are domain-prefixed names outside kubernetes.io.
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

// PodRequests computes what a pod occupies on a node, as Kubernetes counts it:
// the larger of (sum of app containers plus restartable "sidecar" init
// containers) and the peak of the init containers run one after another
// (each plus the sidecars started before it), plus the pod overhead.
// Pod-level resources (spec.resources), when set, replace the cpu/memory sums.
// With nonZero, containers that request no cpu or memory count the defaults
// (for scoring only).
//
// A container being resized in place (InPlacePodVerticalScaling) counts the
// larger of its spec's requests and what its node allocated and applied
// (status.containerStatuses[].allocatedResources and .resources), as the
// scheduler of Kubernetes v1.33 does: until the kubelet took the resize in,
// the node may hold either. A resize the kubelet found infeasible counts only
// what the node holds.
func PodRequests(pod *v1.Pod, nonZero bool) *Resource {
	return podRequests(pod, nonZero, true)
}

// PodSpecRequests is PodRequests from the spec alone: what the pod asks for,
// whatever its node holds now (the kubelet's view of a resize it decides on).
func PodSpecRequests(pod *v1.Pod, nonZero bool) *Resource {
	return podRequests(pod, nonZero, false)
}

func podRequests(pod *v1.Pod, nonZero, withStatus bool) *Resource {
	requestsOf := func(c *v1.Container) v1.ResourceList { return c.Resources.Requests }
	if withStatus && hasStatusResources(pod) {
		infeasible := resizeInfeasible(pod)
		requestsOf = func(c *v1.Container) v1.ResourceList { return resizeRequests(pod, c, infeasible) }
	}
	reqs := &Resource{}
	for i := range pod.Spec.Containers {
		reqs.AddResource(containerRequests(requestsOf(&pod.Spec.Containers[i]), nonZero), 1)
	}
	sidecars := &Resource{}
	initPeak := &Resource{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			cr := containerRequests(requestsOf(c), nonZero)
			reqs.AddResource(cr, 1)
			sidecars.AddResource(cr, 1)
			initPeak.SetMax(sidecars)
			continue
		}
		// A regular init container is never resized: its spec counts.
		running := containerRequests(c.Resources.Requests, nonZero)
		running.AddResource(sidecars, 1)
		initPeak.SetMax(running)
	}
	reqs.SetMax(initPeak)
	if pl := pod.Spec.Resources; pl != nil {
		if q, ok := pl.Requests[v1.ResourceCPU]; ok {
			reqs.MilliCPU = q.MilliValue()
		}
		if q, ok := pl.Requests[v1.ResourceMemory]; ok {
			reqs.Memory = q.Value()
		}
	}
	reqs.Add(pod.Spec.Overhead)
	reqs.AllowedPodNumber = 0
	return reqs
}

// RequestsShrank reports whether a pod's update (its resize taken in by its
// node) lowered the cpu or memory it holds.
func RequestsShrank(old, cur *v1.Pod) bool {
	if !hasStatusResources(old) && !hasStatusResources(cur) {
		return false
	}
	before, after := PodRequests(old, false), PodRequests(cur, false)
	return after.MilliCPU < before.MilliCPU || after.Memory < before.Memory
}

// hasStatusResources reports whether the pod's node reports any container's
// resources; most pods' statuses carry none until they run.
func hasStatusResources(pod *v1.Pod) bool {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Resources != nil {
				return true
			}
		}
	}
	return false
}

// resizeInfeasible reports whether the pod's PodResizePending condition says
// Infeasible: its spec will not be applied, so only what it holds counts.
func resizeInfeasible(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodResizePending {
			return c.Reason == v1.PodReasonInfeasible
		}
	}
	return false
}

// resizeRequests is a container's requests with its status taken in:
// the larger of each resource of the spec (unless infeasible), the applied
// resources and the allocated ones.
func resizeRequests(pod *v1.Pod, c *v1.Container, infeasible bool) v1.ResourceList {
	var cs *v1.ContainerStatus
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == c.Name {
				cs = &list[i]
			}
		}
	}
	if cs == nil || cs.Resources == nil {
		return c.Resources.Requests
	}
	out := v1.ResourceList{}
	lists := []v1.ResourceList{cs.Resources.Requests, cs.AllocatedResources}
	if !infeasible {
		lists = append(lists, c.Resources.Requests)
	}
	for _, list := range lists {
		for name, q := range list {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q
			}
		}
	}
	return out
}

func containerRequests(requests v1.ResourceList, nonZero bool) *Resource {
	r := NewResource(requests)
	if nonZero {
		if _, ok := requests[v1.ResourceCPU]; !ok {
			r.MilliCPU = DefaultMilliCPURequest
		}
		if _, ok := requests[v1.ResourceMemory]; !ok {
			r.Memory = DefaultMemoryRequest
		}
	}
	r.AllowedPodNumber = 0
	return r
}
