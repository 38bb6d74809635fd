package schedtest

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWrapper builds a pod: MakePod().Name("a").Req(Res{"cpu": "1"}).Obj().
type PodWrapper struct{ v1.Pod }

// Res is a short way to write a ResourceList.
type Res map[v1.ResourceName]string

func (r Res) list() v1.ResourceList {
	out := v1.ResourceList{}
	for k, v := range r {
		out[k] = resource.MustParse(v)
	}
	return out
}

// MakePod returns a pod "pod" in namespace "default" with the default scheduler.
func MakePod() *PodWrapper {
	p := &PodWrapper{}
	p.Pod.Namespace = "default"
	p.Spec.SchedulerName = "default-scheduler"
	return p.Name("pod")
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// Name sets the name and a UID derived from it.
func (p *PodWrapper) Name(n string) *PodWrapper {
	p.Pod.Name = n
	p.Pod.UID = types.UID(p.Pod.Namespace + "/" + n + "-uid")
	return p
}

// Namespace sets the namespace (and re-derives the UID).
func (p *PodWrapper) Namespace(ns string) *PodWrapper {
	p.Pod.Namespace = ns
	return p.Name(p.Pod.Name)
}

// UID sets the UID.
func (p *PodWrapper) UID(uid string) *PodWrapper { p.Pod.UID = types.UID(uid); return p }

// Node sets spec.nodeName.
func (p *PodWrapper) Node(n string) *PodWrapper { p.Spec.NodeName = n; return p }

// SchedulerName sets spec.schedulerName.
func (p *PodWrapper) SchedulerName(n string) *PodWrapper { p.Spec.SchedulerName = n; return p }

// Priority sets spec.priority.
func (p *PodWrapper) Priority(v int32) *PodWrapper { p.Spec.Priority = &v; return p }

// PreemptionNever sets spec.preemptionPolicy=Never.
func (p *PodWrapper) PreemptionNever() *PodWrapper {
	n := v1.PreemptNever
	p.Spec.PreemptionPolicy = &n
	return p
}

// Label adds a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Created sets the creation timestamp.
func (p *PodWrapper) Created(t time.Time) *PodWrapper {
	p.CreationTimestamp = metav1.NewTime(t)
	return p
}

// StartTime sets status.startTime.
func (p *PodWrapper) StartTime(t time.Time) *PodWrapper {
	mt := metav1.NewTime(t)
	p.Status.StartTime = &mt
	return p
}

// Terminating sets a deletionTimestamp.
func (p *PodWrapper) Terminating() *PodWrapper {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

// GracePeriod sets terminationGracePeriodSeconds.
func (p *PodWrapper) GracePeriod(s int64) *PodWrapper {
	p.Spec.TerminationGracePeriodSeconds = &s
	return p
}

// Req adds an app container with these requests.
func (p *PodWrapper) Req(r Res) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: containerName("c", len(p.Spec.Containers)), Image: "pause", Resources: v1.ResourceRequirements{Requests: r.list()}})
	return p
}

// Container adds an app container with an image and no requests.
func (p *PodWrapper) Container(image string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: containerName("c", len(p.Spec.Containers)), Image: image})
	return p
}

// InitReq adds a (run-to-completion) init container with these requests.
func (p *PodWrapper) InitReq(r Res) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: containerName("i", len(p.Spec.InitContainers)), Image: "pause", Resources: v1.ResourceRequirements{Requests: r.list()}})
	return p
}

// SidecarReq adds a restartable (restartPolicy: Always) init container.
func (p *PodWrapper) SidecarReq(r Res) *PodWrapper {
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: containerName("s", len(p.Spec.InitContainers)), Image: "pause", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: r.list()}})
	return p
}

// Overhead sets spec.overhead.
func (p *PodWrapper) Overhead(r Res) *PodWrapper { p.Spec.Overhead = r.list(); return p }

// HostPort adds a container exposing a host port.
func (p *PodWrapper) HostPort(ip string, protocol v1.Protocol, port int32) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: containerName("p", len(p.Spec.Containers)), Image: "pause",
		Ports: []v1.ContainerPort{{HostIP: ip, Protocol: protocol, HostPort: port, ContainerPort: port}}})
	return p
}

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(key string, op v1.TolerationOperator, value string, effect v1.TaintEffect) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	return p
}

// NodeSelector sets spec.nodeSelector.
func (p *PodWrapper) NodeSelector(m map[string]string) *PodWrapper { p.Spec.NodeSelector = m; return p }

func (p *PodWrapper) affinity() *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// NodeAffinityIn adds a required node selector term "key In values" (terms are ORed).
func (p *PodWrapper) NodeAffinityIn(key string, values ...string) *PodWrapper {
	return p.NodeAffinityExpr(v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: values})
}

// NodeAffinityExpr adds a required node selector term with one expression.
func (p *PodWrapper) NodeAffinityExpr(req v1.NodeSelectorRequirement) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{}
	}
	ns := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{req}})
	return p
}

// PreferredNodeAffinityIn adds a preferred node term.
func (p *PodWrapper) PreferredNodeAffinityIn(weight int32, key string, values ...string) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.PreferredSchedulingTerm{Weight: weight, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}}}})
	return p
}

// PodAffinityTerm builds a term selecting pods with label key=value.
func PodAffinityTerm(topologyKey, key, value string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}}
}

// PodAffinity adds a required pod affinity term.
func (p *PodWrapper) PodAffinity(term v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term)
	return p
}

// PodAntiAffinity adds a required pod anti-affinity term.
func (p *PodWrapper) PodAntiAffinity(term v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term)
	return p
}

// PreferredPodAffinity adds a preferred pod affinity term.
func (p *PodWrapper) PreferredPodAffinity(weight int32, term v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term})
	return p
}

// PreferredPodAntiAffinity adds a preferred pod anti-affinity term.
func (p *PodWrapper) PreferredPodAntiAffinity(weight int32, term v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term})
	return p
}

// Spread adds a topology spread constraint selecting pods with label key=value.
func (p *PodWrapper) Spread(maxSkew int32, topologyKey string, when v1.UnsatisfiableConstraintAction, key, value string, minDomains *int32) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: when, MinDomains: minDomains,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
	})
	return p
}

func containerName(prefix string, i int) string {
	return prefix + string(rune('0'+i%10))
}

// NodeWrapper builds a node: MakeNode().Name("n1").Capacity(Res{"cpu": "4"}).Obj().
type NodeWrapper struct{ v1.Node }

// MakeNode returns a Ready node "node" allowing 110 pods.
func MakeNode() *NodeWrapper {
	n := &NodeWrapper{}
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	n.Status.Capacity = v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}
	n.Status.Allocatable = v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}
	return n.Name("node")
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Name sets the name, the UID and the kubernetes.io/hostname label.
func (n *NodeWrapper) Name(name string) *NodeWrapper {
	n.Node.Name = name
	n.Node.UID = types.UID(name + "-uid")
	return n.Label(v1.LabelHostname, name)
}

// Label adds a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[k] = v
	return n
}

// Capacity sets capacity and allocatable entries.
func (n *NodeWrapper) Capacity(r Res) *NodeWrapper {
	for k, v := range r.list() {
		n.Status.Capacity[k] = v
		n.Status.Allocatable[k] = v
	}
	return n
}

// Taint adds a taint.
func (n *NodeWrapper) Taint(key, value string, effect v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper { n.Spec.Unschedulable = true; return n }

// Image records an image present on the node.
func (n *NodeWrapper) Image(size int64, names ...string) *NodeWrapper {
	n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: names, SizeBytes: size})
	return n
}
