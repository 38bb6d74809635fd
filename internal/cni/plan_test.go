package cni

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseConf(t *testing.T) {
	valid := `{"cniVersion":"1.0.0","name":"skiff","type":"skiff-bridge","bridge":"cni0","subnets":["10.244.1.0/24"],"stateDir":"/var/lib/skiff/kubelet/cni"}`
	cases := []struct {
		name     string
		conf     string
		wantCode int
		wantText string
		ranges   []Range
	}{
		{name: "valid", conf: valid, ranges: []Range{{Subnet: netip.MustParsePrefix("10.244.1.0/24"), Gateway: netip.MustParseAddr("10.244.1.1")}}},
		{name: "dual stack, unmasked CIDR", conf: strings.Replace(valid, `["10.244.1.0/24"]`, `["10.244.1.7/24","fd00:10:244:1::/64"]`, 1), ranges: []Range{
			{Subnet: netip.MustParsePrefix("10.244.1.0/24"), Gateway: netip.MustParseAddr("10.244.1.1")},
			{Subnet: netip.MustParsePrefix("fd00:10:244:1::/64"), Gateway: netip.MustParseAddr("fd00:10:244:1::1")},
		}},
		{name: "not JSON", conf: `{`, wantCode: codeDecode},
		{name: "old version", conf: strings.Replace(valid, `"1.0.0"`, `"0.2.0"`, 1), wantCode: codeIncompatibleVersion},
		{name: "other type", conf: strings.Replace(valid, `"skiff-bridge"`, `"bridge"`, 1), wantCode: codeInvalidConfig, wantText: `type "bridge"`},
		{name: "no subnets", conf: strings.Replace(valid, `["10.244.1.0/24"]`, `[]`, 1), wantCode: codeInvalidConfig, wantText: "no subnets"},
		{name: "bad subnet", conf: strings.Replace(valid, `10.244.1.0/24`, `10.244.1.0/33`, 1), wantCode: codeInvalidConfig, wantText: "10.244.1.0/33"},
		{name: "subnet too small", conf: strings.Replace(valid, `10.244.1.0/24`, `10.244.1.0/31`, 1), wantCode: codeInvalidConfig, wantText: "no room"},
		{name: "two IPv4 subnets", conf: strings.Replace(valid, `["10.244.1.0/24"]`, `["10.244.1.0/24","10.244.2.0/24"]`, 1), wantCode: codeInvalidConfig, wantText: "same IP family"},
		{name: "long bridge name", conf: strings.Replace(valid, `"cni0"`, `"a-very-long-bridge-name"`, 1), wantCode: codeInvalidConfig, wantText: "bridge"},
		{name: "relative state dir", conf: strings.Replace(valid, `/var/lib/skiff/kubelet/cni`, `cni`, 1), wantCode: codeInvalidConfig, wantText: "stateDir"},
		{name: "name with a slash", conf: strings.Replace(valid, `"name":"skiff"`, `"name":"../x"`, 1), wantCode: codeInvalidConfig, wantText: "name"},
		{name: "every problem at once", conf: `{"cniVersion":"1.0.0","type":"skiff-bridge","mtu":-1}`, wantCode: codeInvalidConfig, wantText: "name \"\" is not a valid network name; bridge \"\" is not a valid interface name; stateDir \"\" is not an absolute path; mtu -1 is out of range; no subnets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := ParseConf([]byte(tc.conf))
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("ParseConf: %v", err)
				}
				if len(n.Ranges) != len(tc.ranges) {
					t.Fatalf("ranges %v, want %v", n.Ranges, tc.ranges)
				}
				for i := range n.Ranges {
					if n.Ranges[i] != tc.ranges[i] {
						t.Errorf("range %d = %v, want %v", i, n.Ranges[i], tc.ranges[i])
					}
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.wantCode {
				t.Fatalf("error %v, want CNI code %d", err, tc.wantCode)
			}
			if !strings.Contains(e.Error(), tc.wantText) {
				t.Errorf("error %q lacks %q", e.Error(), tc.wantText)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{name: "ADD", env: map[string]string{"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "abc", "CNI_NETNS": "/var/run/netns/x", "CNI_IFNAME": "eth0"}},
		{name: "DEL without netns", env: map[string]string{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "abc", "CNI_IFNAME": "eth0"}},
		{name: "VERSION alone", env: map[string]string{"CNI_COMMAND": "VERSION"}},
		{name: "ADD without netns", env: map[string]string{"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "abc", "CNI_IFNAME": "eth0"}, wantErr: "CNI_NETNS not set"},
		{name: "CHECK without anything", env: map[string]string{"CNI_COMMAND": "CHECK"}, wantErr: "CNI_NETNS, CNI_CONTAINERID, CNI_IFNAME not set"},
		{name: "no command", env: map[string]string{}, wantErr: "CNI_COMMAND is not set"},
		{name: "unknown command", env: map[string]string{"CNI_COMMAND": "GC"}, wantErr: `unknown CNI_COMMAND "GC"`},
		{name: "container id with a slash", env: map[string]string{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "../abc", "CNI_IFNAME": "eth0"}, wantErr: "container id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseArgs(func(k string) string { return tc.env[k] })
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseArgs: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != codeInvalidEnvironment || !strings.Contains(e.Error(), tc.wantErr) {
				t.Fatalf("error %v, want code %d with %q", err, codeInvalidEnvironment, tc.wantErr)
			}
		})
	}
}

func TestNextFree(t *testing.T) {
	r29 := Range{Subnet: netip.MustParsePrefix("10.0.0.0/29"), Gateway: netip.MustParseAddr("10.0.0.1")} // hosts .2 to .6
	v6 := Range{Subnet: netip.MustParsePrefix("fd00::/126"), Gateway: netip.MustParseAddr("fd00::1")}    // fd00::2, ::3
	addr := netip.MustParseAddr
	usedOf := func(addrs ...string) func(netip.Addr) bool {
		set := map[netip.Addr]bool{}
		for _, a := range addrs {
			set[addr(a)] = true
		}
		return func(a netip.Addr) bool { return set[a] }
	}
	cases := []struct {
		name  string
		r     Range
		last  string
		used  []string
		want  string
		limit int
	}{
		{name: "empty range starts after the gateway", r: r29, want: "10.0.0.2"},
		{name: "after the last lease", r: r29, last: "10.0.0.3", want: "10.0.0.4"},
		{name: "skips used", r: r29, last: "10.0.0.3", used: []string{"10.0.0.4", "10.0.0.5"}, want: "10.0.0.6"},
		{name: "wraps around, never the broadcast", r: r29, last: "10.0.0.6", want: "10.0.0.2"},
		{name: "wraps past used", r: r29, last: "10.0.0.5", used: []string{"10.0.0.6", "10.0.0.2"}, want: "10.0.0.3"},
		{name: "full", r: r29, used: []string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"}},
		{name: "last outside the range is ignored", r: r29, last: "192.0.2.7", want: "10.0.0.2"},
		{name: "last is the broadcast", r: r29, last: "10.0.0.7", want: "10.0.0.2"},
		{name: "IPv6 uses the last address", r: v6, last: "fd00::2", want: "fd00::3"},
		{name: "IPv6 wraps", r: v6, last: "fd00::3", want: "fd00::2"},
		{name: "limit reached", r: r29, used: []string{"10.0.0.2", "10.0.0.3"}, limit: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var last netip.Addr
			if tc.last != "" {
				last = addr(tc.last)
			}
			limit := tc.limit
			if limit == 0 {
				limit = 100
			}
			got, ok := NextFree(tc.r, last, usedOf(tc.used...), limit)
			if tc.want == "" {
				if ok {
					t.Fatalf("NextFree = %s, want none", got)
				}
				return
			}
			if !ok || got != addr(tc.want) {
				t.Fatalf("NextFree = %s (%v), want %s", got, ok, tc.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	a, b := HostVethName("abc", "eth0"), HostVethName("abd", "eth0")
	if a == b || a != HostVethName("abc", "eth0") {
		t.Fatalf("veth names not stable and distinct: %s %s", a, b)
	}
	for _, n := range []string{a, b, MasqueradeChain("skiff")} {
		if len(n) > 28 || (strings.HasPrefix(n, "skv") && len(n) > 15) {
			t.Errorf("name %q too long for an interface or a chain", n)
		}
	}
	if !strings.HasPrefix(MasqueradeChain("skiff"), "CNI-SKIFF-") || MasqueradeChain("a") == MasqueradeChain("b") {
		t.Errorf("masquerade chains %s %s", MasqueradeChain("a"), MasqueradeChain("b"))
	}
}

func TestBuildResult(t *testing.T) {
	n, err := ParseConf([]byte(`{"cniVersion":"1.0.0","name":"skiff","type":"skiff-bridge","bridge":"cni0","subnets":["10.244.1.0/24","fd00:1::/64"],"stateDir":"/x"}`))
	if err != nil {
		t.Fatal(err)
	}
	a := Args{Command: "ADD", ContainerID: "abc", Netns: "/var/run/netns/p", IfName: "eth0"}
	addrs := []netip.Addr{netip.MustParseAddr("10.244.1.5"), netip.MustParseAddr("fd00:1::5")}
	for _, tc := range []struct{ version, want string }{
		{"1.0.0", `{"cniVersion":"1.0.0","interfaces":[{"name":"cni0","mac":"b"},{"name":"` + HostVethName("abc", "eth0") + `","mac":"h"},{"name":"eth0","mac":"p","sandbox":"/var/run/netns/p"}],"ips":[{"address":"10.244.1.5/24","gateway":"10.244.1.1","interface":2},{"address":"fd00:1::5/64","gateway":"fd00:1::1","interface":2}],"routes":[{"dst":"0.0.0.0/0","gw":"10.244.1.1"},{"dst":"::/0","gw":"fd00:1::1"}],"dns":{}}`},
		{"0.3.1", `"ips":[{"version":"4","address":"10.244.1.5/24","gateway":"10.244.1.1","interface":2},{"version":"6",`},
	} {
		r, err := BuildResult(tc.version, n, a, "b", "h", "p", addrs)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(r)
		if !strings.Contains(string(raw), tc.want) {
			t.Errorf("result %s\nlacks %s", raw, tc.want)
		}
	}
	if _, err := BuildResult("1.0.0", n, a, "", "", "", addrs[:1]); err == nil {
		t.Error("BuildResult with one address for two ranges: no error")
	}
}

func TestRenderList(t *testing.T) {
	raw, err := RenderList(ListConfig{Name: "skiff", Bridge: "cni0", Subnets: []string{"10.244.1.9/24"}, StateDir: "/var/lib/skiff/kubelet/cni", PortmapPath: "/usr/lib/cni/portmap"})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		CNIVersion string            `json:"cniVersion"`
		Name       string            `json:"name"`
		Plugins    []json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || len(list.Plugins) != 1 || list.Name != "skiff" {
		t.Fatalf("list %s: %v", raw, err)
	}
	// What libcni hands the plugin: the entry with the list's version and name.
	var entry map[string]any
	_ = json.Unmarshal(list.Plugins[0], &entry)
	entry["cniVersion"], entry["name"] = list.CNIVersion, list.Name
	conf, _ := json.Marshal(entry)
	n, err := ParseConf(conf)
	if err != nil {
		t.Fatalf("the plugin refuses its own list: %v\n%s", err, raw)
	}
	if n.Conf.IPMasq || !n.Conf.HairpinMode || !n.Conf.Capabilities["portMappings"] || n.Ranges[0].Subnet.String() != "10.244.1.0/24" {
		t.Errorf("plugin config %+v", n.Conf)
	}
	if _, err := RenderList(ListConfig{Name: "skiff", Bridge: "cni0", Subnets: []string{"x"}, StateDir: "/x"}); err == nil {
		t.Error("bad CIDR rendered")
	}
	if _, err := RenderList(ListConfig{Name: "skiff", Bridge: "cni0", Subnets: []string{"10.0.0.0/24"}, StateDir: "rel"}); err == nil {
		t.Error("relative state dir rendered")
	}
}
