package netpol

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cnpv1 "sigs.k8s.io/network-policy-api/apis/v1beta1"
)

// cnp makes a ClusterNetworkPolicy whose subject is every pod of the namespaces matching nsLabels.
func cnp(name string, tier cnpv1.Tier, priority int32, nsLabels map[string]string) *cnpv1.ClusterNetworkPolicy {
	return &cnpv1.ClusterNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: cnpv1.ClusterNetworkPolicySpec{
		Tier: tier, Priority: priority, Subject: cnpv1.ClusterNetworkPolicySubject{Namespaces: &metav1.LabelSelector{MatchLabels: nsLabels}}}}
}

func ingressFrom(action cnpv1.ClusterNetworkPolicyRuleAction, nsLabels map[string]string, protos ...cnpv1.ClusterNetworkPolicyProtocol) cnpv1.ClusterNetworkPolicyIngressRule {
	return cnpv1.ClusterNetworkPolicyIngressRule{Action: action, Protocols: protos,
		From: []cnpv1.ClusterNetworkPolicyIngressPeer{{Namespaces: &metav1.LabelSelector{MatchLabels: nsLabels}}}}
}

// clusterPoliciesForTest are policies of both tiers with every kind of peer, protocol and action.
func clusterPoliciesForTest() ([]*cnpv1.ClusterNetworkPolicy, []*corev1.Node) {
	nameA := map[string]string{"kubernetes.io/metadata.name": "a"}
	nameB := map[string]string{"kubernetes.io/metadata.name": "b"}
	admin := cnp("admin", cnpv1.AdminTier, 3, nameA)
	admin.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{
		ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionPass, nameB, cnpv1.ClusterNetworkPolicyProtocol{UDP: &cnpv1.ClusterNetworkPolicyProtocolUDP{}}),
		ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionDeny, nameB, cnpv1.ClusterNetworkPolicyProtocol{SCTP: &cnpv1.ClusterNetworkPolicyProtocolSCTP{
			DestinationPort: &cnpv1.Port{Range: &cnpv1.PortRange{Start: 100, End: 200}}}}),
		ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionAccept, nameB, cnpv1.ClusterNetworkPolicyProtocol{DestinationNamedPort: "http"}),
	}
	admin.Spec.Egress = []cnpv1.ClusterNetworkPolicyEgressRule{
		{Action: cnpv1.ClusterNetworkPolicyRuleActionAccept, To: []cnpv1.ClusterNetworkPolicyEgressPeer{{Nodes: &metav1.LabelSelector{}}, {Networks: []cnpv1.CIDR{"10.0.0.0/8", "fd00::/8"}}}},
	}
	base := cnp("baseline", cnpv1.BaselineTier, 0, nameB)
	base.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionDeny, map[string]string{})}
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.1"}}}}}
	return []*cnpv1.ClusterNetworkPolicy{admin, base}, nodes
}

func TestBuildClusterPolicies(t *testing.T) {
	nameA := map[string]string{"kubernetes.io/metadata.name": "a"}
	nameB := map[string]string{"kubernetes.io/metadata.name": "b"}
	// Admin: priority 10 denies b -> a on TCP 80; priority 5 passes b -> a entirely (checked
	// first, so the deny never applies); baseline denies everything into a.
	deny := cnp("deny-b", cnpv1.AdminTier, 10, nameA)
	deny.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionDeny, nameB,
		cnpv1.ClusterNetworkPolicyProtocol{TCP: &cnpv1.ClusterNetworkPolicyProtocolTCP{DestinationPort: &cnpv1.Port{Number: 80}}})}
	pass := cnp("pass-b", cnpv1.AdminTier, 5, nameA)
	pass.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionPass, nameB)}
	baseline := cnp("default", cnpv1.BaselineTier, 0, nameA)
	baseline.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionDeny, map[string]string{})}
	egress := cnp("egress", cnpv1.AdminTier, 1, nameB)
	egress.Spec.Egress = []cnpv1.ClusterNetworkPolicyEgressRule{
		{Action: cnpv1.ClusterNetworkPolicyRuleActionAccept, To: []cnpv1.ClusterNetworkPolicyEgressPeer{{Nodes: &metav1.LabelSelector{}}}},
		{Action: cnpv1.ClusterNetworkPolicyRuleActionAccept, To: []cnpv1.ClusterNetworkPolicyEgressPeer{{Pods: &cnpv1.NamespacedPod{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: nameA}, PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}},
			Protocols: []cnpv1.ClusterNetworkPolicyProtocol{{DestinationNamedPort: "sql"}}},
		{Action: cnpv1.ClusterNetworkPolicyRuleActionDeny, To: []cnpv1.ClusterNetworkPolicyEgressPeer{{Networks: []cnpv1.CIDR{"0.0.0.0/0"}}}},
	}
	in := world()
	in.ClusterPolicies = []*cnpv1.ClusterNetworkPolicy{deny, baseline, pass, egress}
	in.Nodes = []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "192.168.0.1"}, {Type: corev1.NodeHostName, Address: "n1"}}}}}
	rs := Build(in)

	// The base chains go through the tiers in order.
	wantRules(t, rs.Chains[chainIngress], "ct state established,related accept",
		"ip daddr vmap @admin-ingress-pods", "ip daddr vmap @ingress-pods", "ip daddr vmap @baseline-ingress-pods")
	wantKeys(t, "admin ingress", rs.Maps[mapAdminIngress], "10.42.0.5", "10.42.0.6")
	wantKeys(t, "baseline ingress", rs.Maps[mapBaselineIngress], "10.42.0.5", "10.42.0.6")
	wantKeys(t, "admin egress", rs.Maps[mapAdminEgress], "10.42.0.9")
	wantKeys(t, "ingress (NetworkPolicy)", rs.Maps[mapIngress])

	admin := rs.Chains[strings.TrimPrefix(rs.Maps[mapAdminIngress]["10.42.0.5"], "jump ")]
	wantRules(t, expand(rs, admin),
		`ip saddr @{10.42.0.9, 10.42.1.9} return comment "cnp pass-b 0"`,
		`ip saddr @{10.42.0.9, 10.42.1.9} meta l4proto tcp th dport 80 counter name dropped-ingress drop comment "cnp deny-b 0"`)

	eg := rs.Chains[strings.TrimPrefix(rs.Maps[mapAdminEgress]["10.42.0.9"], "jump ")]
	wantRules(t, expand(rs, eg),
		`ip daddr @{192.168.0.1} accept comment "cnp egress 0"`,
		`ip daddr @{10.42.1.5} ip daddr . meta l4proto . th dport @{10.42.1.5 . tcp . 5432, 10.42.1.5 . udp . 5433} accept comment "cnp egress 1"`,
		`ip daddr @{0.0.0.0/0} counter name dropped-egress drop comment "cnp egress 2"`)

	// Equal priorities go by name, whatever the input order.
	a, b := cnp("b-first", cnpv1.AdminTier, 7, nameA), cnp("a-first", cnpv1.AdminTier, 7, nameA)
	a.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionDeny, nameB)}
	b.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionAccept, nameB)}
	for _, order := range [][]*cnpv1.ClusterNetworkPolicy{{a, b}, {b, a}} {
		in := world()
		in.ClusterPolicies = order
		rs := Build(in)
		chain := rs.Chains[strings.TrimPrefix(rs.Maps[mapAdminIngress]["10.42.0.5"], "jump ")]
		if len(chain) != 2 || !strings.Contains(chain[0], "a-first") {
			t.Errorf("order %v: %q", []string{order[0].Name, order[1].Name}, chain)
		}
	}
	// The table applies (syntax) in the plan's full form.
	if s, _ := Plan("t", nil, rs); !slices.ContainsFunc(strings.Split(s, "\n"), func(l string) bool { return strings.HasPrefix(l, "add map ip t baseline-ingress-pods") }) {
		t.Errorf("no baseline map declared:\n%s", s)
	}
}
