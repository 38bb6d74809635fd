package cluster

import (
	"fmt"
	"log/slog"
	"testing"
)

func TestProxyOptions(t *testing.T) {
	tests := []struct {
		bind, advertise, serviceCIDR string
		wantNodePorts                string
		wantServiceCIDR              string
	}{
		{"172.31.4.1", "172.31.4.1", "10.43.0.0/16", "[172.31.4.1 127.0.0.1]", "10.43.0.0/16"},
		{"127.0.0.1", "127.0.0.1", "10.43.0.0/16", "[127.0.0.1]", "10.43.0.0/16"},
		// Bound to every address: NodePorts on every local address.
		{"0.0.0.0", "192.168.1.5", "10.96.3.0/24", "[]", "10.96.3.0/24"},
		{"127.0.0.1", "127.0.0.1", "fd00::/108", "[127.0.0.1]", "invalid Prefix"},
	}
	for _, tt := range tests {
		cfg := &Config{
			DataDir:          "/var/lib/skiff-a",
			NodeName:         "a",
			BindAddress:      tt.bind,
			AdvertiseAddress: tt.advertise,
			Logger:           slog.New(slog.DiscardHandler),
			NetworkConfig:    NetworkConfig{ServiceCIDR: tt.serviceCIDR, ClusterCIDR: "10.42.0.0/16"},
		}
		opts, err := proxyOptions(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(opts.NodePortAddresses); got != tt.wantNodePorts {
			t.Errorf("bind %s: node port addresses %s, want %s", tt.bind, got, tt.wantNodePorts)
		}
		if got := opts.ServiceCIDR.String(); got != tt.wantServiceCIDR {
			t.Errorf("service CIDR %s: got %s", tt.serviceCIDR, got)
		}
		if len(opts.Device) > 15 || opts.ClusterCIDR.String() != "10.42.0.0/16" {
			t.Errorf("device %q, cluster CIDR %s", opts.Device, opts.ClusterCIDR)
		}
	}
	if opts, _ := proxyOptions(&Config{DataDir: "/var/lib/skiff-a", Logger: slog.New(slog.DiscardHandler), NetworkConfig: NetworkConfig{ServiceCIDR: "10.43.0.0/16", ProxyMode: "iptables"}}); opts.Mode != "iptables" {
		t.Errorf("--proxy-mode iptables gave mode %q", opts.Mode)
	}
	a, _ := proxyOptions(&Config{DataDir: "/var/lib/skiff-a", Logger: slog.New(slog.DiscardHandler), NetworkConfig: NetworkConfig{ServiceCIDR: "10.43.0.0/16"}})
	b, _ := proxyOptions(&Config{DataDir: "/var/lib/skiff-b", Logger: slog.New(slog.DiscardHandler), NetworkConfig: NetworkConfig{ServiceCIDR: "10.43.0.0/16"}})
	a2, _ := proxyOptions(&Config{DataDir: "/var/lib/skiff-a", Logger: slog.New(slog.DiscardHandler), NetworkConfig: NetworkConfig{ServiceCIDR: "10.43.0.0/16"}})
	if a.Prefix == b.Prefix || a.Device == b.Device || a.Prefix != a2.Prefix || a.Device != a2.Device || a.DeviceMetric != a2.DeviceMetric {
		t.Errorf("per-node names must be stable per data dir and distinct between them: %+v %+v", a, b)
	}
}
