package cluster

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/pki"
)

func TestLBAddress(t *testing.T) {
	tests := []struct {
		bind string
		want string
	}{
		{"0.0.0.0", "127.0.0.1:6444"},
		{"127.0.0.1", "127.0.0.1:6444"},
		{"127.0.0.2", "127.0.0.2:6444"}, // several nodes on one machine do not collide
		{"10.250.0.2", "127.0.0.1:6444"},
		{"::1", "[::1]:6444"},
	}
	for _, tt := range tests {
		cfg := Config{BindAddress: tt.bind, WorkerConfig: WorkerConfig{LBPort: 6444}}
		if got := cfg.LBAddress(); got != tt.want {
			t.Errorf("bind %s: LB address %s, want %s", tt.bind, got, tt.want)
		}
	}
}

// TestLocalKubeconfigGoesThroughTheLB: the admin kubeconfig names the balancer and verifies the
// API servers against the name all their certificates carry.
func TestLocalKubeconfigGoesThroughTheLB(t *testing.T) {
	now := time.Now()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ca", "skiff-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue(pki.Leaf{CommonName: "admin", Client: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{BindAddress: "127.0.0.3", ControlPlaneConfig: ControlPlaneConfig{HTTPSPort: 6443}, WorkerConfig: WorkerConfig{LBPort: 7000}}
	data, err := localKubeconfig(&cfg, ca.CertPEM, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.3:7000" || rc.TLSClientConfig.ServerName != lbServerName {
		t.Fatalf("host %s, server name %q", rc.Host, rc.TLSClientConfig.ServerName)
	}
}
