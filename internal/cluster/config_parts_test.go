package cluster

import (
	"strings"
	"testing"
	"time"
)

// partCase is one row of a part's Validate table: the part as given and the errors it must
// report, each by a fragment of its message (none: valid).
type partCase[P interface{ Validate() []error }] struct {
	name string
	part P
	want []string
}

func checkPart[P interface{ Validate() []error }](t *testing.T, cases []partCase[P]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.part.Validate()
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d matching %q", len(errs), errs, len(tc.want), tc.want)
			}
			for _, want := range tc.want {
				found := false
				for _, err := range errs {
					found = found || strings.Contains(err.Error(), want)
				}
				if !found {
					t.Errorf("no error contains %q: %v", want, errs)
				}
			}
		})
	}
}

func defaulted() Config {
	c := Config{DataDir: "/tmp/x"}
	c.Default()
	return c
}

func TestEtcdConfigValidate(t *testing.T) {
	ok := defaulted().EtcdConfig
	with := func(f func(*EtcdConfig)) EtcdConfig { c := ok; f(&c); return c }
	checkPart(t, []partCase[EtcdConfig]{
		{name: "defaults", part: ok},
		{name: "HTTP port 0 is a loopback port", part: with(func(c *EtcdConfig) { c.EtcdHTTPPort = 0 })},
		{name: "client port 0", part: with(func(c *EtcdConfig) { c.EtcdClientPort = 0 }), want: []string{"--etcd-client-port 0 is out of range 1-65535"}},
		{name: "peer port too high", part: with(func(c *EtcdConfig) { c.EtcdPeerPort = 65536 }), want: []string{"--etcd-peer-port 65536 is out of range 1-65535"}},
		{name: "HTTP port negative", part: with(func(c *EtcdConfig) { c.EtcdHTTPPort = -1 }), want: []string{"--etcd-http-port -1 is out of range 0-65535"}},
		{name: "negative quota and bad port together", part: with(func(c *EtcdConfig) { c.EtcdQuotaBackendBytes = -1; c.EtcdClientPort = 70000 }),
			want: []string{"--etcd-quota-backend-bytes -1 must not be negative", "--etcd-client-port 70000"}},
		{name: "disk reserve under a WAL segment", part: with(func(c *EtcdConfig) { c.EtcdDiskReserveBytes = 1 << 20 }),
			want: []string{"--etcd-disk-reserve-bytes 1048576 must be 0 (automatic) or at least 67108864"}},
		{name: "negative disk reserve", part: with(func(c *EtcdConfig) { c.EtcdDiskReserveBytes = -1 }),
			want: []string{"--etcd-disk-reserve-bytes -1 must be 0"}},
		{name: "disk reserve of a WAL segment", part: with(func(c *EtcdConfig) { c.EtcdDiskReserveBytes = 64 << 20 })},
	})
}

func TestControlPlaneConfigValidate(t *testing.T) {
	ok := defaulted().ControlPlaneConfig
	with := func(f func(*ControlPlaneConfig)) ControlPlaneConfig { c := ok; f(&c); return c }
	neg := int64(-1)
	checkPart(t, []partCase[ControlPlaneConfig]{
		{name: "defaults", part: ok},
		{name: "HTTPS port out of range", part: with(func(c *ControlPlaneConfig) { c.HTTPSPort = 70000 }), want: []string{"--https-port 70000 is out of range 1-65535"}},
		{name: "relative local-path dir", part: with(func(c *ControlPlaneConfig) { c.LocalPathDir = "storage" }), want: []string{`--local-path-dir "storage" must be absolute`}},
		{name: "unknown cloud provider", part: with(func(c *ControlPlaneConfig) { c.CloudProvider = "aws" }), want: []string{"aws"}},
		{name: "negative toleration seconds", part: with(func(c *ControlPlaneConfig) { c.DefaultUnreachableTolerationSeconds = &neg }),
			want: []string{"--default-unreachable-toleration-seconds -1 must not be negative"}},
		{name: "renew deadline not shorter than the lease", part: with(func(c *ControlPlaneConfig) { c.LeaseDuration, c.RenewDeadline = 10*time.Second, 10*time.Second }),
			want: []string{"--leader-elect-renew-deadline 10s must be shorter"}},
		{name: "bad encoding and negative inflight", part: with(func(c *ControlPlaneConfig) { c.StorageEncoding = "xml"; c.MaxRequestsInflight = -1 }),
			want: []string{`storage encoding "xml"`, "--max-requests-inflight -1"}},
		{name: "negative durations", part: with(func(c *ControlPlaneConfig) {
			c.MetricsResolution, c.NodeMonitorGracePeriod, c.ClusterSigningDuration, c.HPASyncPeriod, c.RequestTimeout = -1, -1, -1, -1, -1
		}), want: []string{"--metrics-resolution", "--node-monitor-grace-period", "--cluster-signing-duration", "--horizontal-pod-autoscaler-sync-period", "--request-timeout"}},
	})
}

func TestWorkerConfigValidate(t *testing.T) {
	ok := defaulted().WorkerConfig
	with := func(f func(*WorkerConfig)) WorkerConfig { c := ok; f(&c); return c }
	checkPart(t, []partCase[WorkerConfig]{
		{name: "defaults", part: ok},
		{name: "safe-listed unsafe sysctls and a reservation", part: with(func(c *WorkerConfig) {
			c.AllowedUnsafeSysctls, c.SystemReserved = []string{"net.core.somaxconn", "kernel.msg*"}, "cpu=500m,memory=512Mi"
		})},
		{name: "kubelet port 0", part: with(func(c *WorkerConfig) { c.KubeletPort = 0 }), want: []string{"--kubelet-port 0 is out of range"}},
		{name: "LB port too high", part: with(func(c *WorkerConfig) { c.LBPort = 65536 }), want: []string{"--lb-port 65536 is out of range"}},
		{name: "node-wide sysctl", part: with(func(c *WorkerConfig) { c.AllowedUnsafeSysctls = []string{"vm.swappiness"} }), want: []string{"--allowed-unsafe-sysctls"}},
		{name: "bad reservation", part: with(func(c *WorkerConfig) { c.SystemReserved = "cpu=lots" }), want: []string{"--system-reserved"}},
	})
}

func TestNetworkConfigValidate(t *testing.T) {
	ok := defaulted().NetworkConfig
	with := func(f func(*NetworkConfig)) NetworkConfig { c := ok; f(&c); return c }
	checkPart(t, []partCase[NetworkConfig]{
		{name: "defaults", part: ok},
		{name: "bridge plugin, iptables proxy, upstreams", part: with(func(c *NetworkConfig) {
			c.CNIPlugin, c.ProxyMode, c.DNSUpstreams = CNIPluginBridge, "iptables", []string{"127.0.0.53:53"}
		})},
		{name: "unknown CNI plugin", part: with(func(c *NetworkConfig) { c.CNIPlugin = "flannel" }), want: []string{`--cni-plugin "flannel"`}},
		{name: "service CIDR without prefix", part: with(func(c *NetworkConfig) { c.ServiceCIDR = "10.0.0.0" }), want: []string{"service CIDR"}},
		{name: "cluster DNS by name", part: with(func(c *NetworkConfig) { c.ClusterDNS = []string{"dns.local"} }), want: []string{`--cluster-dns "dns.local" is not an IP address`}},
		{name: "upstream without port", part: with(func(c *NetworkConfig) { c.DNSUpstreams = []string{"1.1.1.1"} }), want: []string{`--dns-upstream "1.1.1.1": want IP:port`}},
		{name: "bad domain and proxy mode", part: with(func(c *NetworkConfig) { c.ClusterDomain, c.ProxyMode = "Cluster_Local", "ipvs" }),
			want: []string{"--cluster-domain", `--proxy-mode "ipvs"`}},
	})
}

func TestSecurityConfigValidate(t *testing.T) {
	checkPart(t, []partCase[SecurityConfig]{
		{name: "nothing set", part: SecurityConfig{}},
		{name: "audit log rotation", part: SecurityConfig{AuditPolicyFile: "/etc/audit.yaml", AuditLogPath: "-", AuditLogMaxSizeMB: 100, AuditLogMaxBackups: 10}},
		{name: "negative audit max size", part: SecurityConfig{AuditLogMaxSizeMB: -1}, want: []string{"--audit-log-maxsize -1 must not be negative"}},
		{name: "negative audit backups", part: SecurityConfig{AuditLogMaxBackups: -2}, want: []string{"--audit-log-maxbackup -2 must not be negative"}},
	})
}

// TestConfigValidateJoinsParts: Config.Validate reports every part's errors together, with the
// node's own and the cross-part ones.
func TestConfigValidateJoinsParts(t *testing.T) {
	c := defaulted()
	c.BindAddress = "localhost"
	c.EtcdClientPort = 0
	c.HTTPSPort = 0
	c.KubeletPort = -1
	c.ProxyMode = "ipvs"
	c.AuditLogMaxBackups = -1
	c.EtcdServers = []string{"https://e:2379"} // with the etcd role: a cross-part error
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate passed")
	}
	for _, want := range []string{"--bind-address", "--etcd-client-port", "--https-port", "--kubelet-port", "--proxy-mode", "--audit-log-maxbackup", "drop the etcd role or the flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
