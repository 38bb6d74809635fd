package cluster

import (
	"strings"
	"testing"
)

func TestParseRoles(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "etcd,controlplane,worker", want: "etcd,controlplane,worker"},
		{in: " worker , etcd,worker", want: "worker,etcd"},
		{in: "etcd,master", wantErr: `unknown role "master"`},
		{in: ",", wantErr: "at least one role"},
	}
	for _, tt := range tests {
		roles, err := ParseRoles(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRoles(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		var got []string
		for _, r := range roles {
			got = append(got, string(r))
		}
		if err != nil || strings.Join(got, ",") != tt.want {
			t.Errorf("ParseRoles(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults are a whole single node", cfg: Config{DataDir: "/tmp/x"}},
		{name: "control plane on external etcd", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleControlPlane}, EtcdConfig: EtcdConfig{EtcdServers: []string{"http://127.0.0.1:2379"}}}},
		{name: "control plane needs etcd", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleControlPlane}}, wantErr: "needs --etcd-servers"},
		{name: "embedded and external etcd", cfg: Config{DataDir: "/tmp/x", EtcdConfig: EtcdConfig{EtcdServers: []string{"http://e:2379"}}}, wantErr: "drop the etcd role or the flag"},
		{name: "worker-only needs joining", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleWorker}}, wantErr: "a worker-only node joins a cluster: --server"},
		{name: "worker joins", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleWorker}, Server: "https://172.31.0.1:6443", Token: "K10" + strings.Repeat("a", 64) + "::abcdef.0123456789abcdef"}},
		{name: "worker restarts without a token", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleWorker}, Server: "https://172.31.0.1:6443"}},
		{name: "join token without pin", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleWorker}, Server: "https://172.31.0.1:6443", Token: "abcdef.0123456789abcdef"}, wantErr: "--token: join token must look like"},
		{name: "server not https", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleWorker}, Server: "http://172.31.0.1:6443"}, wantErr: "must be https://HOST:PORT"},
		{name: "control plane joins on external etcd", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleControlPlane}, Server: "https://172.31.0.1:6443", EtcdConfig: EtcdConfig{EtcdServers: []string{"http://127.0.0.1:2379"}}}},
		{name: "stacked etcd joins", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleEtcd, RoleControlPlane}, Server: "https://172.31.0.1:6443"}},
		{name: "etcd-only joins", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleEtcd}, Server: "https://172.31.0.1:6443"}},
		{name: "etcd-only needs a cluster", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleEtcd}}, wantErr: "an etcd-only node joins a cluster"},
		{name: "etcd,worker without controlplane", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleEtcd, RoleWorker}, Server: "https://172.31.0.1:6443"}, wantErr: "--roles etcd,worker is not supported"},
		{name: "control plane joins the cluster's etcd", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleControlPlane}, Server: "https://172.31.0.1:6443"}},
		{name: "token without server", cfg: Config{DataDir: "/tmp/x", Token: "K10" + strings.Repeat("a", 64) + "::abcdef.0123456789abcdef"}, wantErr: "--token needs --server"},
		{name: "etcd TLS files need external etcd", cfg: Config{DataDir: "/tmp/x", EtcdConfig: EtcdConfig{EtcdCAFile: "/dev/null"}}, wantErr: "go with --etcd-servers"},
		{name: "etcd cert without key", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleControlPlane}, EtcdConfig: EtcdConfig{EtcdServers: []string{"https://e:2379"}, EtcdCertFile: "/dev/null"}}, wantErr: "--etcd-certfile and --etcd-keyfile go together"},
		{name: "missing etcd CA file", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleControlPlane}, EtcdConfig: EtcdConfig{EtcdServers: []string{"https://e:2379"}, EtcdCAFile: "/nonexistent/ca.crt"}}, wantErr: "--etcd-cafile"},
		{name: "external etcd over TLS", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleControlPlane}, EtcdConfig: EtcdConfig{EtcdServers: []string{"https://e:2379"}, EtcdCAFile: "/dev/null", EtcdCertFile: "/dev/null", EtcdKeyFile: "/dev/null"}}},
		{name: "etcd join needs the etcd role", cfg: Config{DataDir: "/tmp/x", Roles: []Role{RoleControlPlane}, EtcdConfig: EtcdConfig{EtcdServers: []string{"https://e:2379"}, EtcdJoinKubeconfig: "/tmp/admin.kubeconfig"}}, wantErr: "needs the etcd role"},
		{name: "bad port", cfg: Config{DataDir: "/tmp/x", ControlPlaneConfig: ControlPlaneConfig{HTTPSPort: 70000}}, wantErr: "--https-port 70000 is out of range"},
		{name: "bad bind address", cfg: Config{DataDir: "/tmp/x", BindAddress: "localhost"}, wantErr: "is not an IP address"},
		{name: "bad service CIDR", cfg: Config{DataDir: "/tmp/x", NetworkConfig: NetworkConfig{ServiceCIDR: "10.0.0.0"}}, wantErr: "service CIDR"},
		{name: "bad encoding", cfg: Config{DataDir: "/tmp/x", ControlPlaneConfig: ControlPlaneConfig{StorageEncoding: "xml"}}, wantErr: "want protobuf or json"},
		{name: "proxy mode iptables", cfg: Config{DataDir: "/tmp/x", NetworkConfig: NetworkConfig{ProxyMode: "iptables"}}},
		{name: "bad proxy mode", cfg: Config{DataDir: "/tmp/x", NetworkConfig: NetworkConfig{ProxyMode: "ipvs"}}, wantErr: `--proxy-mode "ipvs": want nftables or iptables`},
		{name: "bad cluster DNS", cfg: Config{DataDir: "/tmp/x", NetworkConfig: NetworkConfig{ClusterDNS: []string{"dns.local"}}}, wantErr: `--cluster-dns "dns.local" is not an IP address`},
		{name: "bad cluster domain", cfg: Config{DataDir: "/tmp/x", NetworkConfig: NetworkConfig{ClusterDomain: "Cluster_Local"}}, wantErr: "--cluster-domain"},
		{name: "node-wide unsafe sysctl", cfg: Config{DataDir: "/tmp/x", WorkerConfig: WorkerConfig{AllowedUnsafeSysctls: []string{"vm.swappiness"}}}, wantErr: `--allowed-unsafe-sysctls: the sysctl "vm.swappiness" is not known to be namespaced`},
		{name: "bad reservation", cfg: Config{DataDir: "/tmp/x", WorkerConfig: WorkerConfig{SystemReserved: "cpu=lots"}}, wantErr: "--system-reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Default()
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestFirstAddresses(t *testing.T) {
	ip, err := firstServiceIP("10.43.0.0/16")
	if err != nil || ip.String() != "10.43.0.1" {
		t.Fatalf("firstServiceIP = %v, %v", ip, err)
	}
	for _, tc := range []struct {
		cidr string
		want string
	}{{"10.43.0.0/16", "10.43.0.10"}, {"10.96.0.0/12", "10.96.0.10"}, {"fd00:43::/108", "fd00:43::a"}, {"10.0.0.0/29", ""}} {
		ip, err := serviceIP(tc.cidr, 10)
		if (tc.want == "") != (err != nil) || (err == nil && ip.String() != tc.want) {
			t.Errorf("serviceIP(%s, 10) = %v, %v; want %q", tc.cidr, ip, err, tc.want)
		}
	}
	var defaulted Config
	defaulted.Default()
	if strings.Join(defaulted.ClusterDNS, ",") != "10.43.0.10" || defaulted.ClusterDomain != "cluster.local" {
		t.Errorf("default cluster DNS %v, domain %q", defaulted.ClusterDNS, defaulted.ClusterDomain)
	}
	cidr, err := firstPodCIDR("10.42.0.0/16")
	if err != nil || cidr != "10.42.0.0/24" {
		t.Fatalf("firstPodCIDR = %v, %v", cidr, err)
	}
	if got := kubeletRoles([]Role{RoleEtcd, RoleControlPlane, RoleWorker}); strings.Join(got, ",") != "etcd,control-plane,worker" {
		t.Fatalf("kubeletRoles = %v", got)
	}
}
