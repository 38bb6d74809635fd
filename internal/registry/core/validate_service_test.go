package core

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateServiceAcceptsValidServices(t *testing.T) {
	cases := map[string]func(*corev1.Service){
		"cluster ip": func(s *corev1.Service) {},
		"allocated":  func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.10"; s.Spec.ClusterIPs = []string{"10.96.0.10"} },
		"headless": func(s *corev1.Service) {
			s.Spec.ClusterIP = "None"
			s.Spec.ClusterIPs = []string{"None"}
			s.Spec.Ports = nil
		},
		"named ports": func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, Protocol: "TCP", TargetPort: intstr.FromString("web")}, {Name: "https", Port: 443, Protocol: "TCP", TargetPort: intstr.FromInt32(8443)}}
		},
		"node port": func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.Ports[0].NodePort = 30080
		},
		"external name": func(s *corev1.Service) {
			*s = corev1.Service{ObjectMeta: s.ObjectMeta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com.", SessionAffinity: corev1.ServiceAffinityNone}}
		},
		"client ip affinity": func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			DefaultService(s)
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			svc := makeService("web")
			mutate(svc)
			requireNoErrors(t, ValidateService(svc))
		})
	}
}

func TestValidateServiceRejects(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Service)
		want   wantErr
	}{
		{"name must start with a letter", func(s *corev1.Service) { s.Name = "1web" }, wantErr{"metadata.name", field.ErrorTypeInvalid, "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character"}},
		{"dotted name", func(s *corev1.Service) { s.Name = "web.prod" }, wantErr{"metadata.name", field.ErrorTypeInvalid, "DNS-1035"}},
		{"type", func(s *corev1.Service) { s.Spec.Type = "Internal" }, wantErr{"spec.type", field.ErrorTypeNotSupported, `"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`}},
		{"ports required", func(s *corev1.Service) { s.Spec.Ports = nil }, wantErr{"spec.ports", field.ErrorTypeRequired, ""}},
		{"port range", func(s *corev1.Service) { s.Spec.Ports[0].Port = 0 }, wantErr{"spec.ports[0].port", field.ErrorTypeInvalid, "must be between 1 and 65535, inclusive"}},
		{"protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "ICMP" }, wantErr{"spec.ports[0].protocol", field.ErrorTypeNotSupported, ""}},
		{"names required with two ports", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "b", Port: 81, Protocol: "TCP", TargetPort: intstr.FromInt32(81)})
		}, wantErr{"spec.ports[0].name", field.ErrorTypeRequired, ""}},
		{"duplicate port name", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80, Protocol: "TCP", TargetPort: intstr.FromInt32(80)}, {Name: "a", Port: 81, Protocol: "TCP", TargetPort: intstr.FromInt32(81)}}
		}, wantErr{"spec.ports[1].name", field.ErrorTypeDuplicate, ""}},
		{"duplicate port", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80, Protocol: "TCP", TargetPort: intstr.FromInt32(80)}, {Name: "b", Port: 80, Protocol: "TCP", TargetPort: intstr.FromInt32(81)}}
		}, wantErr{"spec.ports[1]", field.ErrorTypeDuplicate, ""}},
		{"target port", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(70000) }, wantErr{"spec.ports[0].targetPort", field.ErrorTypeInvalid, ""}},
		{"node port on ClusterIP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30000 }, wantErr{"spec.ports[0].nodePort", field.ErrorTypeForbidden, "may not be used when `type` is 'ClusterIP'"}},
		{"selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "a b"} }, wantErr{"spec.selector", field.ErrorTypeInvalid, ""}},
		{"session affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = "Cookie" }, wantErr{"spec.sessionAffinity", field.ErrorTypeNotSupported, `"ClientIP", "None"`}},
		{"affinity timeout", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptrTo(int32(90000))}}
		}, wantErr{"spec.sessionAffinityConfig.clientIP.timeoutSeconds", field.ErrorTypeInvalid, "must be greater than 0 and less than 86400"}},
		{"cluster ip", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.300" }, wantErr{"spec.clusterIP", field.ErrorTypeInvalid, ""}},
		{"cluster ips mismatch", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.1"; s.Spec.ClusterIPs = []string{"10.96.0.2"} }, wantErr{"spec.clusterIPs", field.ErrorTypeInvalid, "first value must match `clusterIP`"}},
		{"external name required", func(s *corev1.Service) {
			*s = corev1.Service{ObjectMeta: s.ObjectMeta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, SessionAffinity: corev1.ServiceAffinityNone}}
		}, wantErr{"spec.externalName", field.ErrorTypeRequired, ""}},
		{"external name with cluster ip", func(s *corev1.Service) {
			*s = corev1.Service{ObjectMeta: s.ObjectMeta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "x.com", ClusterIP: "10.0.0.1", SessionAffinity: corev1.ServiceAffinityNone}}
		}, wantErr{"spec.clusterIP", field.ErrorTypeForbidden, ""}},
		{"external traffic policy on ClusterIP", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal },
			wantErr{"spec.externalTrafficPolicy", field.ErrorTypeInvalid, "may only be set for externally-accessible services"}},
		{"internal traffic policy", func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicy("Node"))
		},
			wantErr{"spec.internalTrafficPolicy", field.ErrorTypeNotSupported, ""}},
		{"ip family policy", func(s *corev1.Service) { s.Spec.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicy("Both")) },
			wantErr{"spec.ipFamilyPolicy", field.ErrorTypeNotSupported, ""}},
		{"source ranges on ClusterIP", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} },
			wantErr{"spec.loadBalancerSourceRanges", field.ErrorTypeForbidden, ""}},
		{"external ip loopback", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"127.0.0.1"} },
			wantErr{"spec.externalIPs[0]", field.ErrorTypeInvalid, "may not be in the loopback range"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := makeService("web")
			c.mutate(svc)
			requireError(t, ValidateService(svc), c.want)
		})
	}
}

func TestValidateServiceUpdate(t *testing.T) {
	old := makeService("web")
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}

	svc := old.DeepCopy()
	svc.Spec.Selector = map[string]string{"app": "other"}
	requireNoErrors(t, ValidateServiceUpdate(svc, old))

	svc = old.DeepCopy()
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"}
	requireError(t, ValidateServiceUpdate(svc, old), wantErr{"spec.clusterIPs[0]", field.ErrorTypeInvalid, "may not change once set"})

	// Switching to ExternalName releases the cluster IP.
	svc = old.DeepCopy()
	svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com", SessionAffinity: corev1.ServiceAffinityNone}
	requireNoErrors(t, ValidateServiceUpdate(svc, old))
}

func TestValidateServiceStatusUpdate(t *testing.T) {
	old := makeService("web")
	svc := old.DeepCopy()
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}, {Hostname: "lb.example.com"}}
	requireNoErrors(t, ValidateServiceStatusUpdate(svc, old))
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "not-an-ip"}}
	requireError(t, ValidateServiceStatusUpdate(svc, old), wantErr{"status.loadBalancer.ingress[0].ip", field.ErrorTypeInvalid, ""})
}

// TestHealthCheckNodePortRules: a LoadBalancer with externalTrafficPolicy Local keeps its
// healthCheckNodePort across a PUT that omits it and may not change it; any other shape may not
// have one, and one that stops needing it drops it unless the update changed it.
func TestHealthCheckNodePortRules(t *testing.T) {
	ctx := context.Background()
	s := resourceByPlural(t, "services").Strategy
	lb := func(policy corev1.ServiceExternalTrafficPolicy, hc int32) *corev1.Service {
		svc := makeService("web")
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		svc.Spec.ExternalTrafficPolicy = policy
		svc.Spec.HealthCheckNodePort = hc
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
		svc.Spec.Ports[0].NodePort = 30080
		return svc
	}
	local, cluster := corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster
	old := lb(local, 31000)
	cases := []struct {
		name   string
		update *corev1.Service
		wantHC int32
		want   *wantErr
	}{
		{"omitted: kept", lb(local, 0), 31000, nil},
		{"changed: immutable", lb(local, 31001), 31001, &wantErr{"spec.healthCheckNodePort", field.ErrorTypeForbidden, "field is immutable"}},
		{"policy Cluster: dropped", lb(cluster, 31000), 0, nil},
		{"policy Cluster with another port: refused", lb(cluster, 31001), 31001, &wantErr{"spec.healthCheckNodePort", field.ErrorTypeInvalid, "may only be set when `type` is 'LoadBalancer'"}},
		{"NodePort: dropped", func() *corev1.Service { s := lb(local, 31000); s.Spec.Type = corev1.ServiceTypeNodePort; return s }(), 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.PrepareForUpdate(ctx, c.update, old)
			if c.update.Spec.HealthCheckNodePort != c.wantHC {
				t.Errorf("healthCheckNodePort = %d, want %d", c.update.Spec.HealthCheckNodePort, c.wantHC)
			}
			errs := s.ValidateUpdate(ctx, c.update, old)
			if c.want == nil {
				requireNoErrors(t, errs)
			} else {
				requireError(t, errs, *c.want)
			}
		})
	}
}
