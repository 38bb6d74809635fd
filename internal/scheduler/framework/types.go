package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// AffinityTerm is a parsed pod (anti-)affinity term.
type AffinityTerm struct {
	Namespaces        sets.Set[string]
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector
}

// Matches reports whether pod (whose namespace has nsLabels) is selected by the term.
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if t.Namespaces.Has(pod.Namespace) || t.NamespaceSelector.Matches(nsLabels) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// PodInfo is a pod with its parsed affinity terms and requests, computed once.
type PodInfo struct {
	Pod                        *v1.Pod
	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	Requests                   *Resource
	NonZeroRequests            *Resource
	// Priority is the pod's spec.priority (0 when unset), kept here because the scheduling queue
	// compares it on every step of its heap.
	Priority int32
	// groupKey is the pod's PodIndex label group.
	groupKey string
}

// PodPriority is the pod's spec.priority, 0 when unset (the admission plugin fills it in).
func PodPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// NewPodInfo parses pod. Invalid label selectors make the term match nothing
// (the API server rejects them, so this only guards against bad fakes).
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod, Requests: PodRequests(pod, false), NonZeroRequests: PodRequests(pod, true), Priority: PodPriority(pod),
		groupKey: groupKey(pod)}
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			pi.RequiredAffinityTerms = parseTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAffinityTerms = parseWeightedTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			pi.RequiredAntiAffinityTerms = parseTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAntiAffinityTerms = parseWeightedTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	return pi
}

func parseTerms(pod *v1.Pod, terms []v1.PodAffinityTerm) []AffinityTerm {
	out := make([]AffinityTerm, 0, len(terms))
	for i := range terms {
		out = append(out, ParseAffinityTerm(pod, &terms[i]))
	}
	return out
}

func parseWeightedTerms(pod *v1.Pod, terms []v1.WeightedPodAffinityTerm) []WeightedAffinityTerm {
	out := make([]WeightedAffinityTerm, 0, len(terms))
	for i := range terms {
		out = append(out, WeightedAffinityTerm{AffinityTerm: ParseAffinityTerm(pod, &terms[i].PodAffinityTerm), Weight: terms[i].Weight})
	}
	return out
}

// ParseAffinityTerm parses one term of pod. An empty namespaces list with no
// namespaceSelector means the pod's own namespace; an empty namespaceSelector
// ({}) means every namespace. matchLabelKeys/mismatchLabelKeys are merged into
// the selector with the owning pod's label values.
func ParseAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) AffinityTerm {
	t := AffinityTerm{TopologyKey: term.TopologyKey, Namespaces: sets.New(term.Namespaces...), NamespaceSelector: labels.Nothing()}
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		t.Namespaces.Insert(pod.Namespace)
	}
	if term.NamespaceSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector); err == nil {
			t.NamespaceSelector = sel
		}
	}
	t.Selector = labels.Nothing()
	if term.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err == nil {
			t.Selector = sel
			for _, key := range term.MatchLabelKeys {
				if v, ok := pod.Labels[key]; ok {
					if r, err := labels.NewRequirement(key, "in", []string{v}); err == nil {
						t.Selector = t.Selector.Add(*r)
					}
				}
			}
			for _, key := range term.MismatchLabelKeys {
				if v, ok := pod.Labels[key]; ok {
					if r, err := labels.NewRequirement(key, "notin", []string{v}); err == nil {
						t.Selector = t.Selector.Add(*r)
					}
				}
			}
		}
	}
	return t
}

// HostPortSet is the set of host ports in use on a node, by IP and protocol.
type HostPortSet map[string]map[ProtocolPort]struct{}

// ProtocolPort is a protocol and port number.
type ProtocolPort struct {
	Protocol string
	Port     int32
}

const wildcardIP = "0.0.0.0"

// Add records a port.
func (h HostPortSet) Add(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = normalizePort(ip, protocol)
	if h[ip] == nil {
		h[ip] = map[ProtocolPort]struct{}{}
	}
	h[ip][ProtocolPort{protocol, port}] = struct{}{}
}

// Remove forgets a port.
func (h HostPortSet) Remove(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = normalizePort(ip, protocol)
	delete(h[ip], ProtocolPort{protocol, port})
	if len(h[ip]) == 0 {
		delete(h, ip)
	}
}

// Conflicts reports whether ip/protocol/port overlaps a port in use; the
// wildcard address conflicts with every address.
func (h HostPortSet) Conflicts(ip, protocol string, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = normalizePort(ip, protocol)
	pp := ProtocolPort{protocol, port}
	if ip == wildcardIP {
		for _, ports := range h {
			if _, ok := ports[pp]; ok {
				return true
			}
		}
		return false
	}
	for _, candidate := range []string{ip, wildcardIP} {
		if _, ok := h[candidate][pp]; ok {
			return true
		}
	}
	return false
}

func normalizePort(ip, protocol string) (string, string) {
	if ip == "" {
		ip = wildcardIP
	}
	if protocol == "" {
		protocol = string(v1.ProtocolTCP)
	}
	return ip, protocol
}

// ImageState is one container image present on a node.
type ImageState struct {
	Size int64
	// NumNodes is how many nodes have the image (filled in by the snapshot).
	NumNodes int
}

// NodeInfo is a node with everything scheduled onto it (bound and assumed pods).
type NodeInfo struct {
	// The fields every Filter and Score reads come first and are held by value: a cycle visits
	// hundreds of nodes, and each pointer followed to another object was a cache miss per node
	// (the first reads of a node's allocatable and of its Node were most of the filters' time).
	node          *v1.Node
	unschedulable bool
	taints        []v1.Taint
	// The well-known topology labels, read per node by the affinity and spreading plugins:
	// from here a lookup compares the key with a constant instead of hashing it into the
	// node's label map, another object per node.
	hostname, zone, region          string
	hasHostname, hasZone, hasRegion bool
	Pods                            []*PodInfo
	Allocatable                     Resource
	Requested                       Resource
	// NonZeroRequested counts pods without requests at the scoring defaults.
	NonZeroRequested             Resource
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	UsedPorts                    HostPortSet
	// ImageStates is nil for a node that reports no images, so that plugins learn it from the
	// NodeInfo without touching a map (ImageLocality asks on every node of every cycle).
	ImageStates map[string]*ImageState
	// Generation increases on every change, so snapshots copy only changed nodes.
	Generation int64
}

// NewNodeInfo returns an empty NodeInfo holding the pods.
func NewNodeInfo(pods ...*v1.Pod) *NodeInfo {
	ni := &NodeInfo{UsedPorts: HostPortSet{}}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node returns the node, or nil if only pods are known so far.
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// Label is the node's label key (false when the node lacks it or is not known yet).
func (n *NodeInfo) Label(key string) (string, bool) {
	switch key {
	case v1.LabelHostname:
		return n.hostname, n.hasHostname
	case v1.LabelTopologyZone:
		return n.zone, n.hasZone
	case v1.LabelTopologyRegion:
		return n.region, n.hasRegion
	}
	if n.node == nil {
		return "", false
	}
	v, ok := n.node.Labels[key]
	return v, ok
}

// Unschedulable is the node's spec.unschedulable (false when the node is not known yet).
func (n *NodeInfo) Unschedulable() bool { return n.unschedulable }

// Taints are the node's spec.taints (none when the node is not known yet); shared, read only.
func (n *NodeInfo) Taints() []v1.Taint { return n.taints }

// SetNode sets the node and its allocatable and images.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.unschedulable, n.taints = node.Spec.Unschedulable, node.Spec.Taints
	n.hostname, n.hasHostname = node.Labels[v1.LabelHostname]
	n.zone, n.hasZone = node.Labels[v1.LabelTopologyZone]
	n.region, n.hasRegion = node.Labels[v1.LabelTopologyRegion]
	n.Allocatable = *NewResource(node.Status.Allocatable)
	n.ImageStates = nil
	if len(node.Status.Images) > 0 {
		n.ImageStates = make(map[string]*ImageState, len(node.Status.Images))
	}
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			n.ImageStates[NormalizeImageName(name)] = &ImageState{Size: img.SizeBytes}
		}
	}
	n.Generation++
}

// RemoveNode drops the node but keeps its pods (they may still be deleted later).
func (n *NodeInfo) RemoveNode() {
	n.node, n.unschedulable, n.taints = nil, false, nil
	n.hostname, n.zone, n.region = "", "", ""
	n.hasHostname, n.hasZone, n.hasRegion = false, false, false
	n.Generation++
}

// AddPod counts pod on the node.
func (n *NodeInfo) AddPod(pod *v1.Pod) { n.AddPodInfo(NewPodInfo(pod)) }

// AddPodInfo counts an already parsed pod on the node.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms)+len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0 {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.Requested.AddResource(pi.Requests, 1)
	n.NonZeroRequested.AddResource(pi.NonZeroRequests, 1)
	forEachHostPort(pi.Pod, n.UsedPorts.Add)
	n.Generation++
}

// RemovePod uncounts the pod with pod's namespace, name and UID (an assumed
// copy and the informer's copy of a pod are the same pod).
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	idx := -1
	for i, pi := range n.Pods {
		if pi.Pod.Namespace == pod.Namespace && pi.Pod.Name == pod.Name && pi.Pod.UID == pod.UID {
			idx = i
			break
		}
	}
	if idx < 0 {
		return fmt.Errorf("pod %s/%s not found on node %s", pod.Namespace, pod.Name, n.nodeName())
	}
	pi := n.Pods[idx]
	n.Pods = removeAt(n.Pods, idx)
	n.PodsWithAffinity = removePodInfo(n.PodsWithAffinity, pi)
	n.PodsWithRequiredAntiAffinity = removePodInfo(n.PodsWithRequiredAntiAffinity, pi)
	n.Requested.AddResource(pi.Requests, -1)
	n.NonZeroRequested.AddResource(pi.NonZeroRequests, -1)
	forEachHostPort(pi.Pod, n.UsedPorts.Remove)
	n.Generation++
	return nil
}

func (n *NodeInfo) nodeName() string {
	if n.node == nil {
		return "<unknown>"
	}
	return n.node.Name
}

func removeAt(list []*PodInfo, i int) []*PodInfo {
	last := len(list) - 1
	list[i] = list[last]
	list[last] = nil
	return list[:last]
}

func removePodInfo(list []*PodInfo, pi *PodInfo) []*PodInfo {
	for i := range list {
		if list[i] == pi {
			return removeAt(list, i)
		}
	}
	return list
}

// Clone copies the NodeInfo so the copy's pod lists and sums can change
// independently; pods themselves are shared and never mutated.
func (n *NodeInfo) Clone() *NodeInfo {
	out := &NodeInfo{
		node:                         n.node,
		unschedulable:                n.unschedulable,
		taints:                       n.taints,
		hostname:                     n.hostname,
		zone:                         n.zone,
		region:                       n.region,
		hasHostname:                  n.hasHostname,
		hasZone:                      n.hasZone,
		hasRegion:                    n.hasRegion,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		UsedPorts:                    make(HostPortSet, len(n.UsedPorts)),
		Requested:                    n.Requested.clone(),
		NonZeroRequested:             n.NonZeroRequested.clone(),
		Allocatable:                  n.Allocatable.clone(),
		Generation:                   n.Generation,
	}
	if n.ImageStates != nil {
		out.ImageStates = make(map[string]*ImageState, len(n.ImageStates))
	}
	for ip, ports := range n.UsedPorts {
		cp := make(map[ProtocolPort]struct{}, len(ports))
		for k := range ports {
			cp[k] = struct{}{}
		}
		out.UsedPorts[ip] = cp
	}
	for k, v := range n.ImageStates {
		s := *v
		out.ImageStates[k] = &s
	}
	return out
}

// forEachHostPort calls fn for a pod's host ports (app and init containers).
func forEachHostPort(pod *v1.Pod, fn func(ip, protocol string, port int32)) {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			for _, p := range list[i].Ports {
				if p.HostPort > 0 {
					fn(p.HostIP, string(p.Protocol), p.HostPort)
				}
			}
		}
	}
}

// PodHostPorts returns pod's host ports as (ip, protocol, port) triples.
func PodHostPorts(pod *v1.Pod) []v1.ContainerPort {
	var out []v1.ContainerPort
	forEachHostPort(pod, func(ip, protocol string, port int32) {
		out = append(out, v1.ContainerPort{HostIP: ip, Protocol: v1.Protocol(protocol), HostPort: port})
	})
	return out
}

// NormalizeImageName adds the ":latest" tag to an untagged, undigested image name.
func NormalizeImageName(name string) string {
	slash := -1
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			slash = i
			break
		}
	}
	last := name[slash+1:]
	for i := 0; i < len(last); i++ {
		if last[i] == ':' || last[i] == '@' {
			return name
		}
	}
	return name + ":latest"
}

// NodeInfoLister is the read-only view of all nodes in a snapshot.
type NodeInfoLister interface {
	List() []*NodeInfo
	HavePodsWithAffinityList() []*NodeInfo
	HavePodsWithRequiredAntiAffinityList() []*NodeInfo
	Get(nodeName string) (*NodeInfo, error)
}
