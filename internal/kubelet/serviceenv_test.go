package kubelet

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func service(namespace, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func TestServiceEnv(t *testing.T) {
	services := []*corev1.Service{
		service("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}),
		service("apps", "redis-primary", "10.96.0.20", corev1.ServicePort{Port: 6379, Protocol: corev1.ProtocolTCP}, corev1.ServicePort{Name: "metrics", Port: 9121, Protocol: corev1.ProtocolUDP}),
		service("apps", "headless", corev1.ClusterIPNone, corev1.ServicePort{Port: 80}),
		service("other", "elsewhere", "10.96.0.30", corev1.ServicePort{Port: 80}),
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps"}}
	got := map[string]string{}
	for _, e := range serviceEnv(pod, services) {
		got[e.Name] = e.Value
	}
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
		"REDIS_PRIMARY_SERVICE_HOST": "10.96.0.20", "REDIS_PRIMARY_SERVICE_PORT": "6379", "REDIS_PRIMARY_SERVICE_PORT_METRICS": "9121",
		"REDIS_PRIMARY_PORT": "tcp://10.96.0.20:6379", "REDIS_PRIMARY_PORT_9121_UDP": "udp://10.96.0.20:9121",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, absent := range []string{"HEADLESS_SERVICE_HOST", "ELSEWHERE_SERVICE_HOST"} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s set", absent)
		}
	}
	pod.Spec.EnableServiceLinks = ptr.To(false)
	for _, e := range serviceEnv(pod, services) {
		if e.Name == "REDIS_PRIMARY_SERVICE_HOST" {
			t.Error("service links present with enableServiceLinks false")
		}
	}
}

func TestPodSeesKubernetesServiceEnv(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := h.client.CoreV1().Services("default").Create(context.Background(),
		service("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("service in the informer", func() bool {
		_, err := h.kubelet.services.Services("default").Get("kubernetes")
		return err == nil
	})
	pod := makePod("client").obj()
	pod.Namespace = "team"
	h.create(pod)
	h.waitPod("team", "client", "running", podRunning)
	env := envMap(h.runtime.ContainerConfig(h.runtime.RunningContainer("uid-client", "app")))
	if env["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" || env["KUBERNETES_SERVICE_PORT"] != "443" {
		t.Errorf("env = %v", env)
	}
}
