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
func PodRequests(pod *v1.Pod, nonZero bool) *Resource {
	reqs := &Resource{}
	for i := range pod.Spec.Containers {
		reqs.AddResource(containerRequests(&pod.Spec.Containers[i], nonZero), 1)
	}
	sidecars := &Resource{}
	initPeak := &Resource{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cr := containerRequests(c, nonZero)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			reqs.AddResource(cr, 1)
			sidecars.AddResource(cr, 1)
			initPeak.SetMax(sidecars)
			continue
		}
		running := cr.Clone()
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

func containerRequests(c *v1.Container, nonZero bool) *Resource {
	r := NewResource(c.Resources.Requests)
	if nonZero {
		if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
			r.MilliCPU = DefaultMilliCPURequest
		}
		if _, ok := c.Resources.Requests[v1.ResourceMemory]; !ok {
			r.Memory = DefaultMemoryRequest
		}
	}
	r.AllowedPodNumber = 0
	return r
}
