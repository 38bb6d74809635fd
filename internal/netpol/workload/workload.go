package workload

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Config sizes the workload.
type Config struct {
	// Seed makes the objects and the changes: the same seed, the same workload.
	Seed uint64
	// Nodes the pods are spread over; Namespaces counts the DNS namespace (kube-system), which
	// holds two DNS pods of the Pods and no policy.
	Nodes, Namespaces, Pods, Policies int
}

// Default is the size issue 25 asks for: 5,000 pods in 50 namespaces over 3 nodes, 1,000 policies.
func Default() Config {
	return Config{Seed: 1, Nodes: 3, Namespaces: 50, Pods: 5000, Policies: 1000}
}

// DNSNamespace holds the cluster DNS pods (label k8s-app=kube-dns) that egress policies allow.
const DNSNamespace = "kube-system"

// World is the cluster's objects. Change edits it by replacing the objects it changes: an object
// once in the World is never modified, as an informer's objects are not.
type World struct {
	Nodes      []string
	Namespaces []*corev1.Namespace
	Pods       []*corev1.Pod
	Policies   []*networkingv1.NetworkPolicy

	rng *rand.Rand
	// next is the next free host number in each node's pod CIDR; seq numbers new pods' names.
	next []uint32
	seq  int
}

// app is a kind of workload a namespace runs: its labels, how many replicas it has relative to
// the others, and its container ports.
type app struct {
	name, tier string
	weight     int
	ports      []corev1.ContainerPort
}

func catalogue() []app {
	p := func(name string, port int32) corev1.ContainerPort {
		return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}
	}
	return []app{
		{"frontend", "frontend", 4, []corev1.ContainerPort{p("http", 8080), p("metrics", 9090)}},
		{"api", "backend", 3, []corev1.ContainerPort{p("http", 8080), p("grpc", 9000), p("metrics", 9090)}},
		{"auth", "backend", 1, []corev1.ContainerPort{p("http", 8080), p("metrics", 9090)}},
		{"search", "backend", 1, []corev1.ContainerPort{p("http", 9200)}},
		{"worker", "backend", 2, []corev1.ContainerPort{p("metrics", 9090)}},
		{"db", "data", 1, []corev1.ContainerPort{p("sql", 5432)}},
		{"cache", "data", 1, []corev1.ContainerPort{p("redis", 6379)}},
		{"queue", "data", 1, []corev1.ContainerPort{p("amqp", 5672)}},
	}
}

// teams label namespaces (and their pods); envs label namespaces.
func teams() []string {
	return []string{"payments", "search", "identity", "checkout", "catalog", "platform", "data", "growth"}
}

func envs() []string { return []string{"prod", "staging", "dev"} }

// PodCIDR is node i's pod range: a /20 of 10.244.0.0/16 (of 10.245.0.0/16 beyond the 16th node).
func PodCIDR(node int) netip.Prefix {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], (10<<24|244<<16)+uint32(node)<<12)
	return netip.PrefixFrom(netip.AddrFrom4(b), 20)
}

// Generate is the workload of cfg. Pods are spread over the nodes at random, round-robin over the
// namespaces, their apps drawn by weight; each namespace has a default deny of ingress first,
// a default deny of egress with DNS allowed second in production namespaces, then policies of
// mixed shapes. Every rule names its ports, as most real policies do, so a port no rule names
// is never allowed by a generated policy (the packet path benchmark relies on this).
func Generate(cfg Config) *World {
	if cfg.Nodes < 1 || cfg.Namespaces < 2 {
		panic(fmt.Sprintf("workload: need a node and two namespaces, got %+v", cfg))
	}
	w := &World{rng: rand.New(rand.NewPCG(cfg.Seed, 0x6e6574706f6c)), next: make([]uint32, cfg.Nodes)}
	for i := range cfg.Nodes {
		w.Nodes = append(w.Nodes, fmt.Sprintf("node-%d", i))
		w.next[i] = 2 // .1 is the node's bridge
	}
	w.Namespaces = append(w.Namespaces, Namespace(DNSNamespace, nil))
	for i := range cfg.Namespaces - 1 {
		w.Namespaces = append(w.Namespaces, Namespace(fmt.Sprintf("ns-%02d", i),
			map[string]string{"team": teams()[i%len(teams())], "env": envs()[w.rng.IntN(len(envs()))]}))
	}
	appNS := w.Namespaces[1:]
	dns := min(2, cfg.Pods)
	for i := range dns {
		w.AddPod(DNSNamespace, fmt.Sprintf("coredns-%d", i), map[string]string{"k8s-app": "kube-dns"}, i%cfg.Nodes,
			corev1.ContainerPort{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
			corev1.ContainerPort{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP})
	}
	for i := range cfg.Pods - dns {
		w.addAppPod(appNS[i%len(appNS)], w.pickApp())
	}
	for i := range cfg.Policies {
		w.Policies = append(w.Policies, w.policy(appNS[i%len(appNS)], i/len(appNS)))
	}
	return w
}

// Namespace is a namespace with labels and its kubernetes.io/metadata.name label.
func Namespace(name string, labels map[string]string) *corev1.Namespace {
	l := map[string]string{"kubernetes.io/metadata.name": name}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// AddPod adds a running pod on node (an index of Nodes) with the next free address of the node's
// pod CIDR, and returns it.
func (w *World) AddPod(ns, name string, labels map[string]string, node int, ports ...corev1.ContainerPort) *corev1.Pod {
	ip := w.nextAddr(node)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: w.Nodes[node],
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Ports: ports}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip.String(), PodIPs: []corev1.PodIP{{IP: ip.String()}}},
	}
	w.Pods = append(w.Pods, p)
	return p
}

func (w *World) nextAddr(node int) netip.Addr {
	base := PodCIDR(node).Addr().As4()
	n := binary.BigEndian.Uint32(base[:]) + w.next[node]
	w.next[node]++
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], n)
	return netip.AddrFrom4(b)
}

func (w *World) pickApp() app {
	apps := catalogue()
	total := 0
	for _, a := range apps {
		total += a.weight
	}
	n := w.rng.IntN(total)
	for _, a := range apps {
		if n < a.weight {
			return a
		}
		n -= a.weight
	}
	return apps[0]
}

// addAppPod adds a replica of a in ns on a random node, labelled as a Deployment's pod is.
func (w *World) addAppPod(ns *corev1.Namespace, a app) *corev1.Pod {
	w.seq++
	hash := templateHash(ns.Name + "/" + a.name)
	labels := map[string]string{"app": a.name, "tier": a.tier, "team": ns.Labels["team"], "pod-template-hash": hash}
	return w.AddPod(ns.Name, fmt.Sprintf("%s-%s-%05d", a.name, hash, w.seq), labels, w.rng.IntN(len(w.Nodes)), a.ports...)
}

func templateHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())[:8]
}

func podSel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func portNum(proto corev1.Protocol, n int32) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(proto), Port: ptr.To(intstr.FromInt32(n))}
}

func portName(name string) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromString(name))}
}

// dnsEgress allows the cluster DNS, as every egress-isolating policy must.
func dnsEgress() networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{NamespaceSelector: podSel("kubernetes.io/metadata.name", DNSNamespace), PodSelector: podSel("k8s-app", "kube-dns")}},
		Ports: []networkingv1.NetworkPolicyPort{portNum(corev1.ProtocolUDP, 53), portNum(corev1.ProtocolTCP, 53)},
	}
}

// policy is the k-th policy of namespace ns.
func (w *World) policy(ns *corev1.Namespace, k int) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name}}
	s := &np.Spec
	ingress := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egress := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	apps := catalogue()
	x, y := apps[w.rng.IntN(len(apps))], apps[w.rng.IntN(len(apps))]
	switch {
	case k == 0:
		np.Name, s.PolicyTypes = "default-deny-ingress", ingress
		return np
	case k == 1 && ns.Labels["env"] == "prod":
		np.Name, s.PolicyTypes = "default-deny-egress", egress
		s.Egress = []networkingv1.NetworkPolicyEgressRule{dnsEgress()}
		return np
	}
	s.PodSelector = *podSel("app", x.name)
	switch n := w.rng.IntN(100); {
	case n < 25: // by pod label, a port by number
		np.Name = fmt.Sprintf("allow-%s-from-%s-%02d", x.name, y.name, k)
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: podSel("app", y.name)}},
			Ports: []networkingv1.NetworkPolicyPort{portNum(corev1.ProtocolTCP, x.ports[0].ContainerPort)}}}
	case n < 45: // by namespace label, a named port
		team := teams()[w.rng.IntN(len(teams()))]
		np.Name = fmt.Sprintf("allow-%s-from-team-%s-%02d", x.name, team, k)
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: podSel("team", team)}},
			Ports: []networkingv1.NetworkPolicyPort{portName(x.ports[0].Name)}}}
	case n < 60: // both selectors in one peer, by tier
		env := envs()[w.rng.IntN(len(envs()))]
		np.Name = fmt.Sprintf("allow-%s-from-%s-%s-%02d", x.tier, env, y.tier, k)
		s.PodSelector = *podSel("tier", x.tier)
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: podSel("env", env), PodSelector: podSel("tier", y.tier)}},
			Ports: []networkingv1.NetworkPolicyPort{portName(x.ports[0].Name), portName("metrics")}}}
	case n < 70: // ipBlock with except
		np.Name = fmt.Sprintf("allow-%s-from-cidr-%02d", x.name, k)
		third := w.rng.IntN(256)
		office, guests := fmt.Sprintf("172.16.%d.0/24", third), fmt.Sprintf("172.16.%d.128/26", third)
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.244.0.0/16", "10.96.0.0/12"}}},
			{IPBlock: &networkingv1.IPBlock{CIDR: office, Except: []string{guests}}},
		}, Ports: []networkingv1.NetworkPolicyPort{portNum(corev1.ProtocolTCP, x.ports[0].ContainerPort), portNum(corev1.ProtocolTCP, 443)}}}
	case n < 85: // egress to the namespace's database by named port, and DNS
		np.Name, s.PolicyTypes = fmt.Sprintf("%s-egress-db-%02d", x.name, k), egress
		s.Egress = []networkingv1.NetworkPolicyEgressRule{
			{To: []networkingv1.NetworkPolicyPeer{{PodSelector: podSel("app", "db")}, {PodSelector: podSel("app", "cache")}},
				Ports: []networkingv1.NetworkPolicyPort{portName("sql"), portName("redis")}},
			dnsEgress(),
		}
	case n < 95: // egress to the internet but not the private ranges, and DNS
		np.Name, s.PolicyTypes = fmt.Sprintf("%s-egress-external-%02d", x.name, k), egress
		s.Egress = []networkingv1.NetworkPolicyEgressRule{
			{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"}}}},
				Ports: []networkingv1.NetworkPolicyPort{portNum(corev1.ProtocolTCP, 443)}},
			dnsEgress(),
		}
	default: // both directions, a port range and UDP
		np.Name, s.PolicyTypes = fmt.Sprintf("%s-ranges-%02d", x.name, k), append(ingress, egress...)
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: podSel("tier", "frontend")}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(30000)), EndPort: ptr.To[int32](30100)},
				portNum(corev1.ProtocolUDP, 5000)}}}
		s.Egress = []networkingv1.NetworkPolicyEgressRule{dnsEgress()}
	}
	return np
}

// Change is a kind of single change between two syncs.
type Change string

// The changes Change makes.
const (
	PolicyEdited        Change = "policy-edited"
	PodRelabelled       Change = "pod-relabelled"
	NamespaceRelabelled Change = "namespace-relabelled"
	PodAdded            Change = "pod-added"
	PodRemoved          Change = "pod-removed"
)

// Changes are all the kinds of change.
func Changes() []Change {
	return []Change{PolicyEdited, PodRelabelled, NamespaceRelabelled, PodAdded, PodRemoved}
}

// Edit is one change as the API sees it: a verb (create, update, delete) and the object.
type Edit struct {
	Verb   string
	Object runtime.Object
}

// Change makes one change of kind c to a random object of the workload: a policy's first rule
// gains or loses port 9100; a pod moves to another app (its app and tier labels); a namespace
// moves to another team; a new pod of a random app lands on a random node; a pod goes. The DNS
// namespace and its pods are left alone.
func (w *World) Change(c Change) Edit {
	switch c {
	case PolicyEdited:
		i := w.rng.IntN(len(w.Policies))
		for j := range w.Policies { // the next policy with a rule: default denies have none
			if np := w.Policies[(i+j)%len(w.Policies)]; len(np.Spec.Ingress)+len(np.Spec.Egress) > 0 {
				i = (i + j) % len(w.Policies)
				break
			}
		}
		np := w.Policies[i].DeepCopy()
		var ports *[]networkingv1.NetworkPolicyPort
		if len(np.Spec.Ingress) > 0 {
			ports = &np.Spec.Ingress[0].Ports
		} else {
			ports = &np.Spec.Egress[0].Ports
		}
		extra := portNum(corev1.ProtocolTCP, 9100)
		if n := len(*ports); n > 0 && (*ports)[n-1].Port.IntVal == 9100 {
			*ports = (*ports)[:n-1]
		} else {
			*ports = append(*ports, extra)
		}
		w.Policies[i] = np
		return Edit{Verb: "update", Object: np}
	case PodRelabelled:
		i := w.appPod()
		p := w.Pods[i].DeepCopy()
		a := w.pickApp()
		for a.name == p.Labels["app"] {
			a = w.pickApp()
		}
		p.Labels["app"], p.Labels["tier"] = a.name, a.tier
		w.Pods[i] = p
		return Edit{Verb: "update", Object: p}
	case NamespaceRelabelled:
		i := 1 + w.rng.IntN(len(w.Namespaces)-1)
		ns := w.Namespaces[i].DeepCopy()
		all := teams()
		team := all[w.rng.IntN(len(all))]
		for team == ns.Labels["team"] {
			team = all[w.rng.IntN(len(all))]
		}
		ns.Labels["team"] = team
		w.Namespaces[i] = ns
		return Edit{Verb: "update", Object: ns}
	case PodAdded:
		ns := w.Namespaces[1+w.rng.IntN(len(w.Namespaces)-1)]
		return Edit{Verb: "create", Object: w.addAppPod(ns, w.pickApp())}
	case PodRemoved:
		i := w.appPod()
		p := w.Pods[i]
		w.Pods = slices.Delete(w.Pods, i, i+1)
		return Edit{Verb: "delete", Object: p}
	}
	panic(fmt.Sprintf("workload: unknown change %q", c))
}

// appPod is the index of a random pod outside the DNS namespace.
func (w *World) appPod() int {
	for {
		if i := w.rng.IntN(len(w.Pods)); w.Pods[i].Namespace != DNSNamespace {
			return i
		}
	}
}

// isolates tells whether np isolates pods in direction t: its policyTypes, or by Kubernetes'
// default Ingress always and Egress when it has egress rules.
func isolates(np *networkingv1.NetworkPolicy, t networkingv1.PolicyType) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return t == networkingv1.PolicyTypeIngress || len(np.Spec.Egress) > 0
	}
	return slices.Contains(np.Spec.PolicyTypes, t)
}

// Selecting is how many policies select pod in direction t.
func (w *World) Selecting(pod *corev1.Pod, t networkingv1.PolicyType) int {
	n := 0
	for _, np := range w.Policies {
		if np.Namespace != pod.Namespace || !isolates(np, t) {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err == nil && sel.Matches(labels.Set(pod.Labels)) {
			n++
		}
	}
	return n
}

// MostIsolated is the pod on node (an index of Nodes), outside the DNS namespace and other than
// skip, that the most policies select in direction t, with their number; ties go to the pod that
// comes first in Pods. The packet path benchmarks connect such pods: the longest realistic path.
func (w *World) MostIsolated(node int, t networkingv1.PolicyType, skip *corev1.Pod) (*corev1.Pod, int) {
	var best *corev1.Pod
	most := -1
	for _, p := range w.Pods {
		if p.Spec.NodeName != w.Nodes[node] || p.Namespace == DNSNamespace || p == skip {
			continue
		}
		if n := w.Selecting(p, t); n > most {
			best, most = p, n
		}
	}
	return best, most
}

// AllowLast is a policy of pod's namespace that selects the pods labelled as pod is and allows TCP
// port in direction t from (ingress) or to (egress) the pods labelled as peer in peer's
// namespace. Its name sorts after every generated policy's, so an agent that walks a pod's
// policies in name order reaches it last.
func AllowLast(t networkingv1.PolicyType, pod, peer *corev1.Pod, port int32) *networkingv1.NetworkPolicy {
	peers := []networkingv1.NetworkPolicyPeer{{NamespaceSelector: podSel("kubernetes.io/metadata.name", peer.Namespace),
		PodSelector: &metav1.LabelSelector{MatchLabels: peer.Labels}}}
	ports := []networkingv1.NetworkPolicyPort{portNum(corev1.ProtocolTCP, port)}
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: "zz-bench-" + strings.ToLower(string(t))},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: pod.Labels}, PolicyTypes: []networkingv1.PolicyType{t}}}
	if t == networkingv1.PolicyTypeIngress {
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: peers, Ports: ports}}
	} else {
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: peers, Ports: ports}}
	}
	return np
}
