// Package quota measures what objects hold of a ResourceQuota, for both sides that must agree on
// it: the API server's ResourceQuota admission (charging a write before it is stored) and the
// resourcequota controller (recounting a namespace). It is pure: objects in, resource lists out.
//
// It must not import the API server, storage or client-go machinery beyond API types.
package quota

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// storageClassSuffix names per-class storage quotas: <class>.storageclass.storage.k8s.io/requests.storage.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// legacyCounts are the object counts with a name of their own besides count/<resource>.
var legacyCounts = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "pods"}:                   corev1.ResourcePods,
	{Resource: "services"}:               corev1.ResourceServices,
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
	{Resource: "persistentvolumeclaims"}: corev1.ResourcePersistentVolumeClaims,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
}

// CountName is count/<resource> for the core group, count/<resource>.<group> otherwise.
func CountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

func one() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }

// Usage is everything one object of gr holds: its counts, and for pods their compute requests and
// limits, for claims their storage (in total and per class), for services their load balancers
// and node ports. A terminated pod holds nothing.
func Usage(gr schema.GroupResource, obj runtime.Object) corev1.ResourceList {
	out := corev1.ResourceList{}
	switch o := obj.(type) {
	case *corev1.Pod:
		if !PodActive(o) {
			return out
		}
		for k, v := range PodCompute(o) {
			out[k] = v
		}
	case *corev1.PersistentVolumeClaim:
		storage, ok := o.Spec.Resources.Requests[corev1.ResourceStorage]
		if ok {
			out[corev1.ResourceRequestsStorage] = storage.DeepCopy()
		}
		if class := claimClass(o); class != "" {
			out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one()
			if ok {
				out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = storage.DeepCopy()
			}
		}
	case *corev1.Service:
		// As Kubernetes' service evaluator: every port of a NodePort Service, and of a LoadBalancer
		// that allocates node ports (the default), counts before the allocator has picked them
		// (admission runs first); a LoadBalancer without node port allocation counts only ports
		// given one explicitly.
		allocates := o.Spec.Type == corev1.ServiceTypeNodePort ||
			(o.Spec.Type == corev1.ServiceTypeLoadBalancer && (o.Spec.AllocateLoadBalancerNodePorts == nil || *o.Spec.AllocateLoadBalancerNodePorts))
		var nodePorts int64
		for _, p := range o.Spec.Ports {
			if p.NodePort != 0 || allocates {
				nodePorts++
			}
		}
		switch o.Spec.Type {
		case corev1.ServiceTypeLoadBalancer:
			out[corev1.ResourceServicesLoadBalancers] = one()
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(nodePorts, resource.DecimalSI)
		case corev1.ServiceTypeNodePort:
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(nodePorts, resource.DecimalSI)
		}
	}
	out[CountName(gr)] = one()
	if name, ok := legacyCounts[gr]; ok {
		out[name] = one()
	}
	return out
}

func claimClass(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return pvc.Annotations[corev1.BetaStorageClassAnnotation]
}

// PodActive reports whether a pod still holds its quota: not Succeeded or Failed.
func PodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// PodCompute is a pod's requests.<r>, limits.<r> and (for cpu, memory and ephemeral-storage) the
// bare <r> name, which means its requests, as PodRequests and PodLimits count them.
func PodCompute(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range PodRequests(p) {
		out[corev1.ResourceName("requests."+string(n))] = q
		if n == corev1.ResourceCPU || n == corev1.ResourceMemory || n == corev1.ResourceEphemeralStorage {
			out[n] = q.DeepCopy()
		}
	}
	for n, q := range PodLimits(p) {
		out[corev1.ResourceName("limits."+string(n))] = q
	}
	return out
}

func pick(r corev1.ResourceRequirements, kind string) corev1.ResourceList {
	if kind == "limits" {
		return r.Limits
	}
	return r.Requests
}

// PodRequests is what a pod holds of each resource it requests, as Kubernetes v1.33's quota
// counts it (PodRequests with status resources): the larger of its containers' sum (with the
// restartable "sidecar" init containers) and the peak of the init containers run one after
// another (each with the sidecars started before it), plus the pod overhead. A container the
// node reports resources for (status.containerStatuses[].resources) counts the larger of its
// spec, what its node allocated and what it applied, so a resize in flight is charged at the
// larger of before and after; a resize the kubelet found Infeasible counts only what the node
// holds. The scheduler counts a pod the same way (scheduler/framework.PodRequests), but on its
// own types; this package links nothing of skiff's (internal/importrules), so the rule is kept
// here in resource lists, the shape quota needs for every resource name.
func PodRequests(p *corev1.Pod) corev1.ResourceList {
	out := aggregate(p, "requests")
	for n, q := range p.Spec.Overhead {
		addTo(out, n, q)
	}
	return out
}

// PodLimits is what a pod is limited to of each resource it limits, counted as PodRequests, with
// the overhead added only to limits that are set and not zero, as Kubernetes' PodLimits.
func PodLimits(p *corev1.Pod) corev1.ResourceList {
	out := aggregate(p, "limits")
	for n, q := range p.Spec.Overhead {
		if v, ok := out[n]; ok && !v.IsZero() {
			addTo(out, n, q)
		}
	}
	return out
}

// aggregate is the containers' requests or limits (kind) summed and maxed as Kubernetes'
// AggregateContainerRequests and AggregateContainerLimits do.
func aggregate(p *corev1.Pod, kind string) corev1.ResourceList {
	infeasible := resizeInfeasible(p)
	total := corev1.ResourceList{}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		addList(total, containerResources(c, status(p.Status.ContainerStatuses, c.Name), kind, infeasible))
	}
	sidecars, initPeak := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		running := corev1.ResourceList{}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			own := containerResources(c, status(p.Status.InitContainerStatuses, c.Name), kind, infeasible)
			addList(total, own)
			addList(sidecars, own)
			addList(running, sidecars)
		} else {
			// A regular init container is never resized: its spec counts.
			addList(running, pick(c.Resources, kind))
			addList(running, sidecars)
		}
		maxList(initPeak, running)
	}
	maxList(total, initPeak)
	return total
}

// containerResources is one container's requests or limits (kind) with its status taken in: the
// spec alone while the node reports no resources for it; else, for requests, the larger of the
// spec (unless the resize is infeasible), the applied and the allocated resources, and for limits
// the larger of the spec and the applied limits (only the applied ones when infeasible).
func containerResources(c *corev1.Container, cs *corev1.ContainerStatus, kind string, infeasible bool) corev1.ResourceList {
	if cs == nil || cs.Resources == nil {
		return pick(c.Resources, kind)
	}
	out := corev1.ResourceList{}
	if !infeasible {
		maxList(out, pick(c.Resources, kind))
	}
	maxList(out, pick(*cs.Resources, kind))
	if kind == "requests" {
		maxList(out, cs.AllocatedResources)
	}
	return out
}

func status(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// resizeInfeasible reports whether the pod's PodResizePending condition says Infeasible: its spec
// will not be applied, so only what its node holds counts.
func resizeInfeasible(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			return c.Reason == corev1.PodReasonInfeasible
		}
	}
	return false
}

func addTo(l corev1.ResourceList, n corev1.ResourceName, q resource.Quantity) {
	sum := l[n].DeepCopy()
	sum.Add(q)
	l[n] = sum
}

func addList(dst, src corev1.ResourceList) {
	for n, q := range src {
		addTo(dst, n, q)
	}
}

func maxList(dst, src corev1.ResourceList) {
	for n, q := range src {
		if cur, ok := dst[n]; !ok || q.Cmp(cur) > 0 {
			dst[n] = q.DeepCopy()
		}
	}
}

// BestEffort reports whether no container of the pod requests or limits anything.
func BestEffort(p *corev1.Pod) bool {
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			return false
		}
	}
	return true
}

// selectors are a quota's scopes and scope selector as requirements.
func selectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// Matches reports whether quota q covers an object of gr: a quota with scopes covers pods in all
// of its scopes only; one without covers everything in its namespace.
func Matches(q *corev1.ResourceQuota, gr schema.GroupResource, obj runtime.Object) bool {
	sel := selectors(q)
	if len(sel) == 0 {
		return true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || gr != (schema.GroupResource{Resource: "pods"}) {
		return false
	}
	for _, s := range sel {
		if !podInScope(pod, s) {
			return false
		}
	}
	return true
}

// IsTerminating says whether a pod is in the Terminating quota scope: it has an active deadline.
// Updating a pod's activeDeadlineSeconds moves it between the Terminating and NotTerminating
// quotas.
func IsTerminating(p *corev1.Pod) bool {
	return p.Spec.ActiveDeadlineSeconds != nil && *p.Spec.ActiveDeadlineSeconds >= 0
}

func podInScope(p *corev1.Pod, s corev1.ScopedResourceSelectorRequirement) bool {
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return IsTerminating(p)
	case corev1.ResourceQuotaScopeNotTerminating:
		return !IsTerminating(p)
	case corev1.ResourceQuotaScopeBestEffort:
		return BestEffort(p)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !BestEffort(p)
	case corev1.ResourceQuotaScopePriorityClass:
		switch s.Operator {
		case corev1.ScopeSelectorOpExists:
			return p.Spec.PriorityClassName != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return p.Spec.PriorityClassName == ""
		case corev1.ScopeSelectorOpIn:
			return contains(s.Values, p.Spec.PriorityClassName)
		case corev1.ScopeSelectorOpNotIn:
			return !contains(s.Values, p.Spec.PriorityClassName)
		}
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		// Validation allows only Exists here; upstream's evaluator reads no operator either.
		return usesCrossNamespacePodAffinity(p)
	}
	return false
}

// usesCrossNamespacePodAffinity reports whether a pod (anti-)affinity term of p, required or
// preferred, may select pods of other namespaces: it names namespaces or has a namespace
// selector (an empty selector is every namespace), as upstream's quota evaluator judges.
func usesCrossNamespacePodAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) != 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// Covers reports whether quota q tracks resource name for objects of gr, as upstream's evaluators
// match: pods their counts and compute resources (only the count under the BestEffort scope),
// claims their counts and storage, services their counts, load balancers and node ports, anything
// else its count/<resource>.<group> (and legacy) name.
func Covers(q *corev1.ResourceQuota, gr schema.GroupResource, name corev1.ResourceName) bool {
	if name == CountName(gr) || name == legacyCounts[gr] {
		return true
	}
	n := string(name)
	switch gr {
	case schema.GroupResource{Resource: "pods"}:
		for _, s := range selectors(q) {
			if s.ScopeName == corev1.ResourceQuotaScopeBestEffort {
				return false
			}
		}
		return strings.HasPrefix(n, "requests.") && name != corev1.ResourceRequestsStorage || strings.HasPrefix(n, "limits.") ||
			name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage
	case schema.GroupResource{Resource: "persistentvolumeclaims"}:
		return name == corev1.ResourceRequestsStorage || strings.Contains(n, storageClassSuffix)
	case schema.GroupResource{Resource: "services"}:
		return name == corev1.ResourceServicesLoadBalancers || name == corev1.ResourceServicesNodePorts
	}
	return false
}

// computeNames are the quota names that make every container state a request or limit.
var computeNames = map[corev1.ResourceName]string{
	corev1.ResourceRequestsCPU: "requests", corev1.ResourceRequestsMemory: "requests", corev1.ResourceCPU: "requests", corev1.ResourceMemory: "requests",
	corev1.ResourceLimitsCPU: "limits", corev1.ResourceLimitsMemory: "limits",
}

// Constraints is upstream's requirement that, where a quota limits cpu or memory, every container
// states that request or limit: "must specify limits.cpu for: a,b; requests.memory for: a".
func Constraints(hard corev1.ResourceList, p *corev1.Pod) error {
	missing := map[string][]string{}
	for name := range hard {
		kind, ok := computeNames[name]
		if !ok {
			continue
		}
		res := corev1.ResourceName(strings.TrimPrefix(strings.TrimPrefix(string(name), "requests."), "limits."))
		for _, c := range append(append([]corev1.Container(nil), p.Spec.Containers...), p.Spec.InitContainers...) {
			if _, ok := pick(c.Resources, kind)[res]; !ok {
				missing[string(name)] = append(missing[string(name)], c.Name)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		containers := missing[n]
		sort.Strings(containers)
		parts = append(parts, fmt.Sprintf("%s for: %s", n, strings.Join(dedupe(containers), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// PrettyPrint is a resource list as upstream prints it in quota errors: name=value, sorted, comma-joined.
func PrettyPrint(l corev1.ResourceList) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		q := l[corev1.ResourceName(k)]
		parts = append(parts, k+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// Names are a list's resource names, sorted and comma-joined.
func Names(names []corev1.ResourceName) string {
	s := make([]string, 0, len(names))
	for _, n := range names {
		s = append(s, string(n))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}
