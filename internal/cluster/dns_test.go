package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestKubeDNSService(t *testing.T) {
	tests := []struct {
		name       string
		clusterDNS []string
		cidr       string
		wantIP     string
	}{
		{"default: the 10th address", nil, "10.43.0.0/16", "10.43.0.10"},
		{"another range", nil, "10.96.0.0/12", "10.96.0.10"},
		{"explicit address in the range", []string{"10.43.0.53"}, "10.43.0.0/16", "10.43.0.53"},
		{"address outside the range: none", []string{"192.0.2.53"}, "10.43.0.0/16", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{DataDir: "/tmp/x", NetworkConfig: NetworkConfig{ServiceCIDR: tt.cidr, ClusterDNS: tt.clusterDNS}}
			cfg.Default()
			svc, ok := kubeDNSService(&cfg)
			if tt.wantIP == "" {
				if ok {
					t.Fatalf("service %v for an address outside the range", svc.Spec.ClusterIP)
				}
				return
			}
			if !ok || svc.Spec.ClusterIP != tt.wantIP || svc.Namespace != "kube-system" || svc.Name != "kube-dns" {
				t.Fatalf("service %+v", svc)
			}
			if svc.Spec.Selector != nil || svc.Spec.InternalTrafficPolicy == nil || *svc.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyLocal {
				t.Errorf("selector %v, internalTrafficPolicy %v", svc.Spec.Selector, svc.Spec.InternalTrafficPolicy)
			}
			if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].Name != "dns" || svc.Spec.Ports[0].Protocol != corev1.ProtocolUDP ||
				svc.Spec.Ports[1].Name != "dns-tcp" || svc.Spec.Ports[1].Protocol != corev1.ProtocolTCP || svc.Spec.Ports[1].Port != 53 {
				t.Errorf("ports %+v", svc.Spec.Ports)
			}
			if svc.Labels["k8s-app"] != "kube-dns" || svc.Labels["kubernetes.io/cluster-service"] != "true" {
				t.Errorf("labels %v", svc.Labels)
			}
		})
	}
}

func TestDNSAddress(t *testing.T) {
	for advertise, want := range map[string]string{
		"172.31.4.1": "172.31.4.1:53", "fd00::1": "[fd00::1]:53", "127.0.0.1": "", "0.0.0.0": "", "::1": "", "bogus": "",
	} {
		got, ok := dnsAddress(&Config{AdvertiseAddress: advertise})
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", advertise, got, ok, want)
		}
	}
}

func TestDNSUpstreamValidation(t *testing.T) {
	for upstream, valid := range map[string]bool{"127.0.0.1:5353": true, "[::1]:53": true, "127.0.0.1": false, "dns.example:53": false} {
		cfg := Config{DataDir: "/tmp/x", NetworkConfig: NetworkConfig{DNSUpstreams: []string{upstream}}}
		cfg.Default()
		if err := cfg.Validate(); (err == nil) != valid {
			t.Errorf("%s: %v", upstream, err)
		}
	}
}
