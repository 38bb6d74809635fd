package networking

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func resourceNamed(t *testing.T, plural string) *registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return nil
}

func serviceBackend(name string, port int32) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
}

func ingress(mods ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			Rules: []networkingv1.IngressRule{{
				Host: "shop.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
					{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: serviceBackend("web", 80)},
				}}},
			}},
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
		},
	}
	for _, m := range mods {
		m(ing)
	}
	return ing
}

func path0(ing *networkingv1.Ingress) *networkingv1.HTTPIngressPath {
	return &ing.Spec.Rules[0].HTTP.Paths[0]
}

func TestValidateIngress(t *testing.T) {
	tests := []struct {
		name string
		obj  *networkingv1.Ingress
		want *errtest.Want
	}{
		{"valid", ingress(), nil},
		{"default backend only", ingress(func(i *networkingv1.Ingress) {
			i.Spec.Rules = nil
			i.Spec.DefaultBackend = ptr.To(serviceBackend("web", 80))
		}), nil},
		{"wildcard host", ingress(func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "*.example.com" }), nil},
		{"named port", ingress(func(i *networkingv1.Ingress) {
			path0(i).Backend.Service.Port = networkingv1.ServiceBackendPort{Name: "http"}
		}), nil},
		{"resource backend", ingress(func(i *networkingv1.Ingress) {
			path0(i).Backend = networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("k8s.example.com"), Kind: "StorageBucket", Name: "static"}}
		}), nil},
		{"implementation specific empty path", ingress(func(i *networkingv1.Ingress) {
			path0(i).Path = ""
			path0(i).PathType = ptr.To(networkingv1.PathTypeImplementationSpecific)
		}), nil},
		{"nothing to route", ingress(func(i *networkingv1.Ingress) { i.Spec.Rules = nil }), &errtest.Want{Field: "spec", Type: field.ErrorTypeInvalid, Detail: "either `defaultBackend` or `rules` must be specified"}},
		{"ip host", ingress(func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "10.0.0.1" }), &errtest.Want{Field: "spec.rules[0].host", Type: field.ErrorTypeInvalid, Detail: "must be a DNS name, not an IP address"}},
		{"no paths", ingress(func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths = nil }), &errtest.Want{Field: "spec.rules[0].http.paths", Type: field.ErrorTypeRequired}},
		{"no path type", ingress(func(i *networkingv1.Ingress) { path0(i).PathType = nil }), &errtest.Want{Field: "spec.rules[0].http.paths[0].pathType", Type: field.ErrorTypeRequired, Detail: "pathType must be specified"}},
		{"bad path type", ingress(func(i *networkingv1.Ingress) { path0(i).PathType = ptr.To(networkingv1.PathType("Regex")) }), &errtest.Want{Field: "spec.rules[0].http.paths[0].pathType", Type: field.ErrorTypeNotSupported}},
		{"relative path", ingress(func(i *networkingv1.Ingress) { path0(i).Path = "api" }), &errtest.Want{Field: "spec.rules[0].http.paths[0].path", Type: field.ErrorTypeInvalid, Detail: "must be an absolute path"}},
		{"dot segment", ingress(func(i *networkingv1.Ingress) { path0(i).Path = "/a/../b" }), &errtest.Want{Field: "spec.rules[0].http.paths[0].path", Type: field.ErrorTypeInvalid, Detail: "must not contain '/../'"}},
		{"dot suffix", ingress(func(i *networkingv1.Ingress) { path0(i).Path = "/a/." }), &errtest.Want{Field: "spec.rules[0].http.paths[0].path", Type: field.ErrorTypeInvalid, Detail: "cannot end with '/.'"}},
		{"two backends", ingress(func(i *networkingv1.Ingress) {
			path0(i).Backend.Resource = &corev1.TypedLocalObjectReference{Kind: "K", Name: "n"}
		}), &errtest.Want{Field: "spec.rules[0].http.paths[0].backend", Type: field.ErrorTypeInvalid, Detail: "cannot set both resource and service backends"}},
		{"no backend", ingress(func(i *networkingv1.Ingress) { path0(i).Backend = networkingv1.IngressBackend{} }), &errtest.Want{Field: "spec.rules[0].http.paths[0].backend", Type: field.ErrorTypeInvalid, Detail: "resource or service backend is required"}},
		{"port name and number", ingress(func(i *networkingv1.Ingress) { path0(i).Backend.Service.Port.Name = "http" }), &errtest.Want{Field: "spec.rules[0].http.paths[0].backend", Type: field.ErrorTypeInvalid, Detail: "cannot set both port name & port number"}},
		{"no port", ingress(func(i *networkingv1.Ingress) { path0(i).Backend.Service.Port = networkingv1.ServiceBackendPort{} }), &errtest.Want{Field: "spec.rules[0].http.paths[0].backend", Type: field.ErrorTypeRequired, Detail: "port name or number is required"}},
		{"port out of range", ingress(func(i *networkingv1.Ingress) { path0(i).Backend.Service.Port.Number = 70000 }), &errtest.Want{Field: "spec.rules[0].http.paths[0].backend.service.port.number", Type: field.ErrorTypeInvalid, Detail: "must be between 1 and 65535, inclusive"}},
		{"service name not dns-1035", ingress(func(i *networkingv1.Ingress) { path0(i).Backend.Service.Name = "1web" }), &errtest.Want{Field: "spec.rules[0].http.paths[0].backend.service.name", Type: field.ErrorTypeInvalid}},
		{"resource without kind", ingress(func(i *networkingv1.Ingress) {
			path0(i).Backend = networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Name: "static"}}
		}), &errtest.Want{Field: "spec.rules[0].http.paths[0].backend.resource.kind", Type: field.ErrorTypeRequired}},
		{"bad tls host", ingress(func(i *networkingv1.Ingress) { i.Spec.TLS[0].Hosts = []string{"Shop_Example"} }), &errtest.Want{Field: "spec.tls[0].hosts[0]", Type: field.ErrorTypeInvalid}},
		{"bad tls secret", ingress(func(i *networkingv1.Ingress) { i.Spec.TLS[0].SecretName = "Bad_Secret" }), &errtest.Want{Field: "spec.tls[0].secretName", Type: field.ErrorTypeInvalid}},
		{"bad class name", ingress(func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("Nginx_1") }), &errtest.Want{Field: "spec.ingressClassName", Type: field.ErrorTypeInvalid}},
		{"annotation disagrees", ingress(func(i *networkingv1.Ingress) {
			i.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
		}), &errtest.Want{Field: "annotations.kubernetes.io/ingress.class", Type: field.ErrorTypeInvalid, Detail: "must match `ingressClassName` when both are specified"}},
	}
	r := resourceNamed(t, "ingresses")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestIngressUpdateAndStatus(t *testing.T) {
	ctx := context.Background()
	r := resourceNamed(t, "ingresses")
	if r.ShortNames[0] != "ing" || !r.Namespaced || r.Status == nil {
		t.Fatalf("resource = %+v", r)
	}
	// A stored ingress whose annotation disagrees may still be updated.
	old := ingress(func(i *networkingv1.Ingress) {
		i.ResourceVersion, i.Generation = "1", 1
		i.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
	})
	upd := old.DeepCopy()
	upd.Spec.Rules[0].Host = "www.example.com"
	upd.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}
	r.Strategy.PrepareForUpdate(ctx, upd, old)
	if upd.Generation != 2 || len(upd.Status.LoadBalancer.Ingress) != 0 {
		t.Fatalf("update = generation %d status %+v", upd.Generation, upd.Status)
	}
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, upd, old), nil)

	st := old.DeepCopy()
	st.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}, {Hostname: "lb.example.com"}}
	r.Status.PrepareForUpdate(ctx, st, old)
	errtest.Check(t, r.Status.ValidateUpdate(ctx, st, old), nil)
	st.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "not-an-ip"}}
	errtest.Check(t, r.Status.ValidateUpdate(ctx, st, old), &errtest.Want{Field: "status.loadBalancer.ingress[0].ip", Type: field.ErrorTypeInvalid, Detail: "must be a valid IP address"})
	st.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "192.0.2.9"}}
	errtest.Check(t, r.Status.ValidateUpdate(ctx, st, old), &errtest.Want{Field: "status.loadBalancer.ingress[0].hostname", Type: field.ErrorTypeInvalid, Detail: "must be a DNS name, not an IP address"})
}

func ingressClass(mods ...func(*networkingv1.IngressClass)) *networkingv1.IngressClass {
	ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
	for _, m := range mods {
		m(ic)
	}
	return ic
}

func TestValidateIngressClass(t *testing.T) {
	params := func(scope string, ns *string) *networkingv1.IngressClassParametersReference {
		return &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb", Scope: ptr.To(scope), Namespace: ns}
	}
	tests := []struct {
		name string
		obj  *networkingv1.IngressClass
		want *errtest.Want
	}{
		{"valid", ingressClass(), nil},
		{"cluster parameters", ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("Cluster", nil) }), nil},
		{"namespaced parameters", ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("Namespace", ptr.To("infra")) }), nil},
		{"no controller", ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "" }), &errtest.Want{Field: "spec.controller", Type: field.ErrorTypeRequired}},
		{"controller without domain", ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "nginx" }), &errtest.Want{Field: "spec.controller", Type: field.ErrorTypeInvalid}},
		{"no scope", ingressClass(func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = params("Cluster", nil)
			ic.Spec.Parameters.Scope = nil
		}), &errtest.Want{Field: "spec.parameters.scope", Type: field.ErrorTypeRequired}},
		{"bad scope", ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("Global", nil) }), &errtest.Want{Field: "spec.parameters.scope", Type: field.ErrorTypeNotSupported}},
		{"namespace scope without namespace", ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("Namespace", nil) }), &errtest.Want{Field: "spec.parameters.namespace", Type: field.ErrorTypeRequired, Detail: "`parameters.scope` is set to 'Namespace'"}},
		{"cluster scope with namespace", ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("Cluster", ptr.To("infra")) }), &errtest.Want{Field: "spec.parameters.namespace", Type: field.ErrorTypeForbidden, Detail: "`parameters.scope` is set to 'Cluster'"}},
		{"parameters without name", ingressClass(func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = params("Cluster", nil)
			ic.Spec.Parameters.Name = ""
		}), &errtest.Want{Field: "spec.parameters.name", Type: field.ErrorTypeRequired}},
	}
	r := resourceNamed(t, "ingressclasses")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
	old := ingressClass(func(ic *networkingv1.IngressClass) { ic.ResourceVersion = "1" })
	errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), ingressClass(func(ic *networkingv1.IngressClass) {
		ic.ResourceVersion = "1"
		ic.Spec.Controller = "example.com/other"
	}), old), &errtest.Want{Field: "spec.controller", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})

	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	defaulted := ingressClass(func(ic *networkingv1.IngressClass) {
		ic.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "K", Name: "n"}
	})
	s.Default(defaulted)
	if *defaulted.Spec.Parameters.Scope != "Cluster" {
		t.Fatalf("scope = %q", *defaulted.Spec.Parameters.Scope)
	}
}

func policy(mods ...func(*networkingv1.NetworkPolicy)) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "allow-web", Namespace: "default"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(80))}},
				From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "lb"}}}},
			}},
		},
	}
	for _, m := range mods {
		m(np)
	}
	return np
}

func TestValidateNetworkPolicy(t *testing.T) {
	port := func(np *networkingv1.NetworkPolicy) *networkingv1.NetworkPolicyPort {
		return &np.Spec.Ingress[0].Ports[0]
	}
	tests := []struct {
		name string
		obj  *networkingv1.NetworkPolicy
		want *errtest.Want
	}{
		{"valid", policy(), nil},
		{"deny all", policy(func(np *networkingv1.NetworkPolicy) { np.Spec = networkingv1.NetworkPolicySpec{} }), nil},
		{"port range", policy(func(np *networkingv1.NetworkPolicy) { port(np).EndPort = ptr.To[int32](90) }), nil},
		{"egress ip block", policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}}}}
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
		}), nil},
		{"bad protocol", policy(func(np *networkingv1.NetworkPolicy) { port(np).Protocol = ptr.To(corev1.Protocol("ICMP")) }), &errtest.Want{Field: "spec.ingress[0].ports[0].protocol", Type: field.ErrorTypeNotSupported}},
		{"port zero", policy(func(np *networkingv1.NetworkPolicy) { port(np).Port = ptr.To(intstr.FromInt32(0)) }), &errtest.Want{Field: "spec.ingress[0].ports[0].port", Type: field.ErrorTypeInvalid, Detail: "must be between 1 and 65535, inclusive"}},
		{"end before port", policy(func(np *networkingv1.NetworkPolicy) { port(np).EndPort = ptr.To[int32](70) }), &errtest.Want{Field: "spec.ingress[0].ports[0].endPort", Type: field.ErrorTypeInvalid, Detail: "must be greater than or equal to `port`"}},
		{"end with named port", policy(func(np *networkingv1.NetworkPolicy) {
			port(np).Port = ptr.To(intstr.FromString("http"))
			port(np).EndPort = ptr.To[int32](90)
		}), &errtest.Want{Field: "spec.ingress[0].ports[0].endPort", Type: field.ErrorTypeInvalid, Detail: "may not be specified when `port` is non-numeric"}},
		{"end without port", policy(func(np *networkingv1.NetworkPolicy) {
			port(np).Port = nil
			port(np).EndPort = ptr.To[int32](90)
		}), &errtest.Want{Field: "spec.ingress[0].ports[0].endPort", Type: field.ErrorTypeInvalid, Detail: "may not be specified when `port` is not specified"}},
		{"bad port name", policy(func(np *networkingv1.NetworkPolicy) { port(np).Port = ptr.To(intstr.FromString("HTTP_PORT")) }), &errtest.Want{Field: "spec.ingress[0].ports[0].port", Type: field.ErrorTypeInvalid}},
		{"empty peer", policy(func(np *networkingv1.NetworkPolicy) { np.Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{}} }), &errtest.Want{Field: "spec.ingress[0].from[0]", Type: field.ErrorTypeRequired, Detail: "must specify a peer"}},
		{"ip block and selector", policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].From[0].IPBlock = &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}
		}), &errtest.Want{Field: "spec.ingress[0].from[0]", Type: field.ErrorTypeForbidden, Detail: "may not specify both ipBlock and another peer"}},
		{"no cidr", policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{}}}
		}), &errtest.Want{Field: "spec.ingress[0].from[0].ipBlock.cidr", Type: field.ErrorTypeRequired}},
		{"except outside", policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.0.0.0/8"}}}}
		}), &errtest.Want{Field: "spec.ingress[0].from[0].ipBlock.except[0]", Type: field.ErrorTypeInvalid, Detail: "must be a strict subset of `cidr`"}},
		{"bad policy type", policy(func(np *networkingv1.NetworkPolicy) { np.Spec.PolicyTypes = []networkingv1.PolicyType{"Both"} }), &errtest.Want{Field: "spec.policyTypes[0]", Type: field.ErrorTypeNotSupported}},
		{"three policy types", policy(func(np *networkingv1.NetworkPolicy) {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{"Ingress", "Egress", "Ingress"}
		}), &errtest.Want{Field: "spec.policyTypes", Type: field.ErrorTypeInvalid, Detail: "may not specify more than two policyTypes"}},
		{"bad selector", policy(func(np *networkingv1.NetworkPolicy) { np.Spec.PodSelector.MatchLabels = map[string]string{"app": "-"} }), &errtest.Want{Field: "spec.podSelector.matchLabels", Type: field.ErrorTypeInvalid}},
	}
	r := resourceNamed(t, "networkpolicies")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
	if r.ShortNames[0] != "netpol" || !r.Namespaced {
		t.Fatalf("resource = %+v", r)
	}
}

func TestNetworkPolicyDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	np := policy()
	s.Default(np)
	if *np.Spec.Ingress[0].Ports[0].Protocol != corev1.ProtocolTCP || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Fatalf("defaults = %+v", np.Spec)
	}
	egress := policy(func(np *networkingv1.NetworkPolicy) { np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}} })
	s.Default(egress)
	if len(egress.Spec.PolicyTypes) != 2 || egress.Spec.PolicyTypes[1] != networkingv1.PolicyTypeEgress {
		t.Fatalf("policy types = %v", egress.Spec.PolicyTypes)
	}
}
