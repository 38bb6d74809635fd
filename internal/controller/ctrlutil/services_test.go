package ctrlutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestResolveTargetPort(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	ports := func(name string, port int32, protocol corev1.Protocol) []corev1.ContainerPort {
		return []corev1.ContainerPort{{Name: name, ContainerPort: port, Protocol: protocol}}
	}
	withContainers := func(regular, init []corev1.Container) *corev1.Pod {
		return pod("p", func(p *corev1.Pod) { p.Spec.Containers, p.Spec.InitContainers = regular, init })
	}
	app := corev1.Container{Name: "app", Ports: ports("http", 8080, corev1.ProtocolTCP)}
	sidecar := corev1.Container{Name: "proxy", RestartPolicy: always, Ports: ports("http-sidecar", 9090, corev1.ProtocolTCP)}
	tests := []struct {
		name     string
		sp       corev1.ServicePort
		pod      *corev1.Pod
		want     int32
		resolved bool
	}{
		{"number", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8081)}, withContainers(nil, nil), 8081, true},
		{"unset: the service port", corev1.ServicePort{Port: 80}, withContainers(nil, nil), 80, true},
		{"name of a container port", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, withContainers([]corev1.Container{app}, nil), 8080, true},
		{"unset protocol is TCP", corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("dns")},
			withContainers([]corev1.Container{{Name: "dns", Ports: ports("dns", 53, "")}}, nil), 53, true},
		{"name with another protocol", corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("http")},
			withContainers([]corev1.Container{app}, nil), 0, false},
		{"name of a sidecar's port", corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http-sidecar")},
			withContainers([]corev1.Container{app}, []corev1.Container{sidecar}), 9090, true},
		{"regular container first", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")},
			withContainers([]corev1.Container{app}, []corev1.Container{{Name: "s", RestartPolicy: always, Ports: ports("http", 7070, corev1.ProtocolTCP)}}), 8080, true},
		{"name of a run-to-completion init container's port", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("setup")},
			withContainers([]corev1.Container{app}, []corev1.Container{{Name: "init", Ports: ports("setup", 7070, corev1.ProtocolTCP)}}), 0, false},
		{"unknown name", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("nope")},
			withContainers([]corev1.Container{app}, []corev1.Container{sidecar}), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ResolveTargetPort(&tt.sp, tt.pod)
			if got != tt.want || ok != tt.resolved {
				t.Fatalf("ResolveTargetPort = %d, %v; want %d, %v", got, ok, tt.want, tt.resolved)
			}
		})
	}
}

func TestShouldPodBeInEndpoints(t *testing.T) {
	deleting := func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }
	withIP := func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.1" }
	phase := func(ph corev1.PodPhase, reason string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = ph, reason }
	}
	tests := []struct {
		name                                string
		pod                                 *corev1.Pod
		withTerminating, withoutTerminating bool
	}{
		{"running with an IP", pod("p", withIP), true, true},
		{"no IP yet", pod("p"), false, false},
		{"only podIPs", pod("p", func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}} }), true, true},
		{"pending with an IP", pod("p", withIP, phase(corev1.PodPending, "")), true, true},
		{"evicted (Failed)", pod("p", withIP, phase(corev1.PodFailed, "Evicted")), false, false},
		{"succeeded", pod("p", withIP, phase(corev1.PodSucceeded, "")), false, false},
		{"terminating", pod("p", withIP, deleting), true, false},
		{"terminating and failed", pod("p", withIP, deleting, phase(corev1.PodFailed, "")), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShouldPodBeInEndpoints(tt.pod, true); got != tt.withTerminating {
				t.Errorf("including terminating pods: %v, want %v", got, tt.withTerminating)
			}
			if got := ShouldPodBeInEndpoints(tt.pod, false); got != tt.withoutTerminating {
				t.Errorf("excluding terminating pods: %v, want %v", got, tt.withoutTerminating)
			}
		})
	}
}
