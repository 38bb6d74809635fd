package routes

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func svc(ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.ServiceSpec{Ports: ports}}
}

type ep struct {
	addr                        string
	ready, serving, terminating bool
}

func slice(svcName, portName string, port int32, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: svcName + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		Ports:      []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(e.serving), Terminating: ptr.To(e.terminating)}})
	}
	return s
}

func TestServiceBackend(t *testing.T) {
	http := corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}
	cases := []struct {
		name    string
		port    ServicePort
		svc     *corev1.Service
		slices  []*discoveryv1.EndpointSlice
		want    []string
		invalid string
	}{
		{name: "ready endpoints by port number", port: ServicePort{Number: 80}, svc: svc(http),
			slices: []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{"10.0.0.2", true, true, false}, ep{"10.0.0.1", true, true, false}, ep{"10.0.0.3", false, false, false})},
			want:   []string{"10.0.0.1:8080", "10.0.0.2:8080"}},
		{name: "by port name", port: ServicePort{Name: "http"}, svc: svc(http),
			slices: []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{"10.0.0.1", true, true, false})},
			want:   []string{"10.0.0.1:8080"}},
		{name: "terminating serving only when none ready", port: ServicePort{Number: 80}, svc: svc(http),
			slices: []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{"10.0.0.1", false, true, true}, ep{"10.0.0.2", false, false, true})},
			want:   []string{"10.0.0.1:8080"}},
		{name: "ready preferred over terminating", port: ServicePort{Number: 80}, svc: svc(http),
			slices: []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{"10.0.0.1", false, true, true}, ep{"10.0.0.2", true, true, false})},
			want:   []string{"10.0.0.2:8080"}},
		{name: "other service's and other port's slices ignored", port: ServicePort{Number: 80}, svc: svc(http),
			slices: []*discoveryv1.EndpointSlice{slice("other", "http", 8080, ep{"10.0.0.1", true, true, false}), slice("web", "metrics", 9090, ep{"10.0.0.2", true, true, false})}},
		{name: "ipv6 in brackets", port: ServicePort{Number: 80}, svc: svc(http),
			slices: []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{"fd00::1", true, true, false})},
			want:   []string{"[fd00::1]:8080"}},
		{name: "missing service", port: ServicePort{Number: 80}, invalid: "not found"},
		{name: "missing port", port: ServicePort{Number: 81}, svc: svc(http), invalid: "no port 81"},
		{name: "missing named port", port: ServicePort{Name: "grpc"}, svc: svc(http), invalid: `no port "grpc"`},
		{name: "external name", port: ServicePort{Number: 80}, svc: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}, invalid: "ExternalName"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := ServiceBackend("ns", "web", c.port, c.svc, c.slices)
			if c.invalid != "" {
				if !strings.Contains(b.Invalid, c.invalid) {
					t.Fatalf("Invalid = %q, want it to say %q", b.Invalid, c.invalid)
				}
				return
			}
			if b.Invalid != "" {
				t.Fatalf("unexpected Invalid %q", b.Invalid)
			}
			var got []string
			for _, e := range b.Endpoints {
				got = append(got, e.Address)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("endpoints = %v, want %v", got, c.want)
			}
		})
	}
}

func TestServiceBackendProtocol(t *testing.T) {
	for app, want := range map[string]BackendProtocol{"": BackendHTTP1, AppProtocolH2C: BackendH2C, "kubernetes.io/ws": BackendHTTP1, "http": BackendHTTP1} {
		p := corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}
		if app != "" {
			p.AppProtocol = ptr.To(app)
		}
		b := ServiceBackend("ns", "web", ServicePort{Number: 80}, svc(p), []*discoveryv1.EndpointSlice{slice("web", "http", 8080, ep{addr: "10.0.0.1", ready: true})})
		if b.Protocol != want || b.Invalid != "" {
			t.Errorf("appProtocol %q: protocol %q (%s), want %q", app, b.Protocol, b.Invalid, want)
		}
	}
}
