package install

import (
	"fmt"
	"slices"
	"testing"

	"github.com/skiff-sh/skiff/internal/cni"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
)

// bundle is a container's OCI config as containerd's CRI plugin writes it.
func bundle(kind, sandbox, netns string) []byte {
	return fmt.Appendf(nil, `{"annotations":{"io.kubernetes.cri.container-type":%q,"io.kubernetes.cri.sandbox-id":%q},
		"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":%q},{"type":"mount"}]}}`, kind, sandbox, netns)
}

func TestPlanHostNetwork(t *testing.T) {
	skiffList, err := containerd.CNINetwork{Name: "skiff", Bridge: "cni0", PodCIDRs: []string{"10.42.0.0/24", "fd00:42::/64"},
		Skiff: &containerd.SkiffCNI{StateDir: "/var/lib/cni/skiff", PortmapPath: "/usr/lib/cni/portmap"}}.Render()
	if err != nil {
		t.Fatal(err)
	}
	stockList, err := containerd.CNINetwork{Name: "blue", Bridge: "skblue", PodCIDRs: []string{"10.250.7.0/24"}}.Render()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		confList []byte
		bundles  [][]byte
		want     HostNetworkPlan
	}{
		{
			name: "nothing written yet",
		},
		{
			name:     "skiff's plugin: the sandboxes' namespaces and veths, containers' /proc paths ignored",
			confList: skiffList,
			bundles: [][]byte{
				bundle("sandbox", "aaa", "/var/run/netns/cni-1"),
				bundle("container", "aaa", "/proc/42/ns/net"),
				bundle("sandbox", "bbb", "/run/netns/cni-2"),
				bundle("sandbox", "bbb", "/run/netns/cni-2"), // the same sandbox twice
			},
			want: HostNetworkPlan{
				NetNS: []string{"/run/netns/cni-2", "/var/run/netns/cni-1"}, SandboxIDs: []string{"aaa", "bbb"},
				Veths:  []string{cni.HostVethName("aaa", "eth0"), cni.HostVethName("bbb", "eth0")},
				Bridge: "cni0", Network: "skiff", Subnets: []string{"10.42.0.0/24", "fd00:42::/64"},
				LeaseDir: "/var/lib/cni/skiff/skiff",
			},
		},
		{
			name:     "stock bridge plugin: host-local's leases, no veth names",
			confList: stockList,
			bundles:  [][]byte{bundle("sandbox", "ccc", "/var/run/netns/cni-3")},
			want: HostNetworkPlan{
				NetNS: []string{"/var/run/netns/cni-3"}, SandboxIDs: []string{"ccc"},
				Bridge: "skblue", Network: "blue", Subnets: []string{"10.250.7.0/24"}, LeaseDir: "/var/lib/cni/networks/blue",
			},
		},
		{
			name: "paths outside /run/netns, odd ids and broken files are never named",
			confList: []byte(`{"name":"../etc","plugins":[{"type":"skiff-bridge","bridge":"cni0","subnets":["10.42.0.0/24"],
				"stateDir":"/var/lib/cni/skiff"}]}`),
			bundles: [][]byte{
				bundle("sandbox", "ddd", "/etc/passwd"),
				bundle("sandbox", "eee", "/run/netns/../../etc"),
				bundle("sandbox", "x/y", "/run/netns/cni-4"),
				[]byte("{not json"),
			},
			want: HostNetworkPlan{SandboxIDs: []string{"ddd", "eee"}},
		},
		{
			name:     "a bridge name no interface can have is ignored",
			confList: []byte(`{"name":"n","plugins":[{"type":"bridge","bridge":"a-name-longer-than-15","ipam":{"type":"host-local"}}]}`),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanHostNetwork(tc.confList, tc.bundles)
			if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
				t.Errorf("plan\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestLeasesToRelease(t *testing.T) {
	p := HostNetworkPlan{SandboxIDs: []string{"aaa", "bbb"}}
	leases := map[string]string{
		"10.42.0.2":   "aaa/eth0",        // skiff's plugin
		"10.42.0.3":   "bbb\r\neth0",     // host-local
		"10.42.0.4":   "other-node/eth0", // another node's pod on the same network
		"fd00:42::5":  "aaa/eth0",
		"last-v4":     "aaa/eth0", // bookkeeping, whatever it holds
		"lock":        "",
		"10.42.0.999": "aaa/eth0",
	}
	want := []string{"10.42.0.2", "10.42.0.3", "fd00:42::5"}
	if got := p.LeasesToRelease(leases); !slices.Equal(got, want) {
		t.Errorf("LeasesToRelease = %q, want %q", got, want)
	}
}

func TestBridgeVerdict(t *testing.T) {
	p := HostNetworkPlan{Bridge: "cni0", Veths: []string{"skvaaa", "skvbbb"}}
	tests := []struct {
		ports       []string
		wantRemove  bool
		wantForeign []string
	}{
		{ports: nil, wantRemove: true},
		{ports: []string{"skvbbb", "skvaaa"}, wantRemove: true},
		{ports: []string{"skvaaa", "skvccc", "veth12345"}, wantForeign: []string{"skvccc", "veth12345"}},
	}
	for _, tc := range tests {
		remove, foreign := p.BridgeVerdict(tc.ports)
		if remove != tc.wantRemove || !slices.Equal(foreign, tc.wantForeign) {
			t.Errorf("BridgeVerdict(%q) = %v %q, want %v %q", tc.ports, remove, foreign, tc.wantRemove, tc.wantForeign)
		}
	}
}
