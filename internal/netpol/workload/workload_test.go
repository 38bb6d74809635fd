package workload

import (
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// TestGenerate: the default workload has the sizes asked for, unique names and addresses each
// inside its node's pod range, every shape of policy, and the same seed gives the same objects.
func TestGenerate(t *testing.T) {
	cfg := Default()
	w := Generate(cfg)
	if len(w.Nodes) != cfg.Nodes || len(w.Namespaces) != cfg.Namespaces || len(w.Pods) != cfg.Pods || len(w.Policies) != cfg.Policies {
		t.Fatalf("sizes: %d nodes, %d namespaces, %d pods, %d policies; want %+v", len(w.Nodes), len(w.Namespaces), len(w.Pods), len(w.Policies), cfg)
	}
	addrs := map[string]string{}
	names := map[string]bool{}
	perNode := map[string]int{}
	for _, p := range w.Pods {
		if names[p.Namespace+"/"+p.Name] {
			t.Errorf("pod %s/%s twice", p.Namespace, p.Name)
		}
		names[p.Namespace+"/"+p.Name] = true
		if other, ok := addrs[p.Status.PodIP]; ok {
			t.Errorf("address %s of %s/%s and %s", p.Status.PodIP, p.Namespace, p.Name, other)
		}
		addrs[p.Status.PodIP] = p.Name
		node := -1
		for i, n := range w.Nodes {
			if n == p.Spec.NodeName {
				node = i
			}
		}
		if a := netip.MustParseAddr(p.Status.PodIP); node < 0 || !PodCIDR(node).Contains(a) {
			t.Errorf("pod %s/%s on %q has address %s outside its node's range", p.Namespace, p.Name, p.Spec.NodeName, a)
		}
		perNode[p.Spec.NodeName]++
	}
	for _, n := range w.Nodes {
		if perNode[n] < cfg.Pods/cfg.Nodes/2 {
			t.Errorf("node %s has %d pods: not spread", n, perNode[n])
		}
	}
	shapes := map[string]bool{}
	for _, np := range w.Policies {
		if names[np.Namespace+"/"+np.Name] {
			t.Errorf("policy %s/%s twice", np.Namespace, np.Name)
		}
		names[np.Namespace+"/"+np.Name] = true
		for _, s := range shapesOf(np) {
			shapes[s] = true
		}
	}
	for _, s := range []string{"default-deny", "pod-label", "namespace-label", "both", "ipblock-except", "named-port", "egress-dns", "end-port"} {
		if !shapes[s] {
			t.Errorf("no policy of shape %s", s)
		}
	}
	if again := Generate(cfg); !reflect.DeepEqual(w, again) {
		t.Error("the same seed gave another workload")
	}
	if other := Generate(Config{Seed: 2, Nodes: 3, Namespaces: 50, Pods: 5000, Policies: 1000}); reflect.DeepEqual(w.Pods, other.Pods) {
		t.Error("another seed gave the same pods")
	}
}

func shapesOf(np *networkingv1.NetworkPolicy) []string {
	var out []string
	if len(np.Spec.Ingress)+len(np.Spec.Egress) == 0 || (len(np.Spec.PodSelector.MatchLabels) == 0 && len(np.Spec.PolicyTypes) == 1 && np.Spec.PolicyTypes[0] == networkingv1.PolicyTypeEgress) {
		out = append(out, "default-deny")
	}
	var peers []networkingv1.NetworkPolicyPeer
	var ports []networkingv1.NetworkPolicyPort
	for _, r := range np.Spec.Ingress {
		peers, ports = append(peers, r.From...), append(ports, r.Ports...)
	}
	for _, r := range np.Spec.Egress {
		peers, ports = append(peers, r.To...), append(ports, r.Ports...)
		for _, p := range r.Ports {
			if p.Port.IntVal == 53 {
				out = append(out, "egress-dns")
			}
		}
	}
	for _, p := range peers {
		switch {
		case p.IPBlock != nil && len(p.IPBlock.Except) > 0:
			out = append(out, "ipblock-except")
		case p.PodSelector != nil && p.NamespaceSelector != nil:
			out = append(out, "both")
		case p.PodSelector != nil:
			out = append(out, "pod-label")
		case p.NamespaceSelector != nil:
			out = append(out, "namespace-label")
		}
	}
	for _, p := range ports {
		if p.Port.StrVal != "" {
			out = append(out, "named-port")
		}
		if p.EndPort != nil {
			out = append(out, "end-port")
		}
	}
	return out
}

// TestChange: each change replaces or adds or removes exactly one object, leaves the object it
// replaced as it was, and is the same for the same seed.
func TestChange(t *testing.T) {
	cfg := Config{Seed: 7, Nodes: 3, Namespaces: 6, Pods: 200, Policies: 40}
	w, twin := Generate(cfg), Generate(cfg)
	for i := range 50 {
		c := Changes()[i%len(Changes())]
		pods, nss, pols := w.Pods, append([]*corev1.Namespace(nil), w.Namespaces...), append([]*networkingv1.NetworkPolicy(nil), w.Policies...)
		podsCopy := append([]*corev1.Pod(nil), pods...)
		before := fmt.Sprint(len(pods), len(nss), len(pols))
		e := w.Change(c)
		if !reflect.DeepEqual(e, twin.Change(c)) {
			t.Fatalf("change %d (%s) differs between two worlds of one seed", i, c)
		}
		changed := 0
		switch c {
		case PodAdded:
			changed = len(w.Pods) - len(podsCopy)
		case PodRemoved:
			changed = len(podsCopy) - len(w.Pods)
		default:
			changed = differing(podsCopy, w.Pods) + differing(nss, w.Namespaces) + differing(pols, w.Policies)
		}
		if changed != 1 || e.Object == nil {
			t.Errorf("change %d (%s): %d objects changed (sizes before %s), edit %s", i, c, changed, before, e.Verb)
		}
		if c == PolicyEdited {
			for j, np := range pols {
				if np != w.Policies[j] && reflect.DeepEqual(np.Spec, w.Policies[j].Spec) {
					t.Errorf("change %d: policy %s replaced but not edited", i, np.Name)
				}
			}
		}
	}
}

func differing[T comparable](a, b []T) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// TestMostIsolated: the pod picked is on the node and no other pod there is selected by more
// policies; the policy allowing its path sorts after its namespace's others and selects it.
func TestMostIsolated(t *testing.T) {
	w := Generate(Default())
	for _, dir := range []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress} {
		p, n := w.MostIsolated(0, dir, nil)
		if p.Spec.NodeName != w.Nodes[0] || n < 2 || w.Selecting(p, dir) != n {
			t.Fatalf("%s: %s/%s on %s selected by %d (%d)", dir, p.Namespace, p.Name, p.Spec.NodeName, n, w.Selecting(p, dir))
		}
		for _, q := range w.Pods {
			if q.Spec.NodeName == w.Nodes[0] && q.Namespace != DNSNamespace && w.Selecting(q, dir) > n {
				t.Errorf("%s: %s/%s is selected by %d policies, more than %s/%s", dir, q.Namespace, q.Name, w.Selecting(q, dir), p.Namespace, p.Name)
			}
		}
		other, _ := w.MostIsolated(0, dir, p)
		np := AllowLast(dir, p, other, 7777)
		for _, g := range w.Policies {
			if g.Namespace == np.Namespace && g.Name >= np.Name {
				t.Errorf("%s sorts after %s", g.Name, np.Name)
			}
		}
		w.Policies = append(w.Policies, np)
		if got := w.Selecting(p, dir); got != n+1 {
			t.Errorf("%s: %s does not select %s/%s: %d policies, want %d", dir, np.Name, p.Namespace, p.Name, got, n+1)
		}
	}
}
