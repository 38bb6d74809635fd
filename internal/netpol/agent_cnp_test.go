package netpol

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	cnpv1 "sigs.k8s.io/network-policy-api/apis/v1beta1"
)

// TestAgentEnforcesClusterPolicies: with the ClusterNetworkPolicy resource served, the Admin tier
// overrides NetworkPolicy both ways, Pass hands over to NetworkPolicy, and the Baseline tier
// applies only to pods no NetworkPolicy isolates; real connections on a node namespace.
func TestAgentEnforcesClusterPolicies(t *testing.T) {
	n := newTestNode(t, "web", "cli", "other")
	client := fake.NewClientset(ns("a", nil), ns("b", nil),
		n.pod("a", "web", map[string]string{"app": "web"}),
		n.pod("a", "cli", map[string]string{"app": "cli"}),
		n.pod("b", "other", map[string]string{"app": "cli"}))
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: clusterNetworkPolicies.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: "clusternetworkpolicies", Kind: "ClusterNetworkPolicy"}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{clusterNetworkPolicies: "ClusterNetworkPolicyList"})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := Run(ctx, client, Options{NodeName: "n1", Prefix: "SKtest", Host: n.host, BridgeNetfilter: "-", Dynamic: dyn,
			DiscoveryPeriod: 50 * time.Millisecond, MinSyncInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}); err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	cnps := dyn.Resource(clusterNetworkPolicies)
	apply := func(p *cnpv1.ClusterNetworkPolicy) {
		t.Helper()
		p.TypeMeta = metav1.TypeMeta{APIVersion: clusterNetworkPolicies.GroupVersion().String(), Kind: "ClusterNetworkPolicy"}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if _, err := cnps.Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
			_, err = cnps.Update(ctx, u, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := cnps.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nameA := map[string]string{"kubernetes.io/metadata.name": "a"}
	nameB := map[string]string{"kubernetes.io/metadata.name": "b"}

	// A NetworkPolicy lets only app=cli of namespace a into web.
	if _, err := client.NetworkingV1().NetworkPolicies("a").Create(ctx, MakePolicy("a", "web").Select("app", "web").
		Ingress([]networkingv1.NetworkPolicyPeer{podPeer("app", "cli")}).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.accepted("cli", "web")
	n.dropped("other", "web", true)

	t.Log("admin Accept from b overrides the NetworkPolicy")
	accept := cnp("admin", cnpv1.AdminTier, 10, nameA)
	accept.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionAccept, nameB)}
	apply(accept)
	n.accepted("other", "web")

	t.Log("admin Deny from a (the policy's own namespace) overrides the NetworkPolicy's allow")
	deny := cnp("admin", cnpv1.AdminTier, 10, nameA)
	deny.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionDeny, nameA)}
	apply(deny)
	n.dropped("cli", "web", true)

	t.Log("a Pass of higher precedence hands cli back to the NetworkPolicy")
	pass := cnp("pass", cnpv1.AdminTier, 1, nameA)
	pass.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionPass, nameA)}
	apply(pass)
	n.accepted("cli", "web")

	t.Log("baseline Deny into b: other is isolated by no NetworkPolicy, so the baseline applies")
	base := cnp("baseline", cnpv1.BaselineTier, 0, nameB)
	base.Spec.Ingress = []cnpv1.ClusterNetworkPolicyIngressRule{ingressFrom(cnpv1.ClusterNetworkPolicyRuleActionDeny, map[string]string{})}
	apply(base)
	n.dropped("web", "other", true)
	t.Log("a NetworkPolicy selecting other takes precedence over the baseline")
	if _, err := client.NetworkingV1().NetworkPolicies("b").Create(ctx, MakePolicy("b", "open").
		Ingress([]networkingv1.NetworkPolicyPeer{nsPeer("kubernetes.io/metadata.name", "a")}).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.accepted("web", "other")
}
