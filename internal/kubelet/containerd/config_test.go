package containerd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultPlacesEverythingUnderDataDir(t *testing.T) {
	c := Default("/var/lib/skiff/node-a")
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate(Default) = %v", err)
	}
	for name, got := range map[string]string{
		"root": c.RootDir, "state": c.StateDir, "address": c.Address, "cni conf": c.CNIConfDir,
		"runc root": c.RuncRoot(), "opt": c.OptDir(), "config": c.ConfigPath(), "certs": c.RegistryConfigDir,
	} {
		if !strings.HasPrefix(got, "/var/lib/skiff/node-a/containerd/") {
			t.Errorf("%s = %q, want it under the node's data dir", name, got)
		}
	}
	if c.CNIBinDir != "/usr/lib/cni" || c.SandboxImage != "localhost/pause:local" {
		t.Errorf("CNIBinDir %q SandboxImage %q", c.CNIBinDir, c.SandboxImage)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"relative data dir", func(c *Config) { c.DataDir = "rel" }, "dataDir"},
		{"socket too long", func(c *Config) { c.Address = "/" + strings.Repeat("x", 120) }, "address"},
		{"bad stream address", func(c *Config) { c.StreamServerAddress = "localhost" }, "streamServerAddress"},
		{"unknown snapshotter", func(c *Config) { c.Snapshotter = "zfs" }, "snapshotter"},
		{"backoff above max", func(c *Config) { c.RestartBackoff = 2 * c.MaxRestartBackoff }, "restartBackoff"},
		{"relative cni dir", func(c *Config) { c.CNIConfDir = "net.d" }, "cniConfDir"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default("/data")
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error about %s", err, tc.want)
			}
		})
	}
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "dataDir: required") {
		t.Errorf("empty config: %v", err)
	}
}

func TestRenderHasRequiredSettings(t *testing.T) {
	c := Default("/data/n1")
	c.StreamServerAddress = "10.99.0.2"
	text, err := c.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`root = "/data/n1/containerd/root"`,
		`state = "/data/n1/containerd/state"`,
		`address = "/data/n1/containerd/state/containerd.sock"`,
		`path = "/data/n1/containerd/root/opt"`,
		`restrict_oom_score_adj = true`,
		`sandbox_image = "localhost/pause:local"`,
		`bin_dir = "/usr/lib/cni"`,
		`conf_dir = "/data/n1/containerd/cni/net.d"`,
		`Root = "/data/n1/containerd/state/runc"`,
		`SystemdCgroup = false`,
		`stream_server_address = "10.99.0.2"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("config lacks %s\n%s", want, text)
		}
	}
	c.SandboxImage = `we"ird\image`
	text, _ = c.Render()
	if !strings.Contains(text, `sandbox_image = "we\"ird\\image"`) {
		t.Errorf("sandbox image not escaped:\n%s", text)
	}
}

func TestCNIConfig(t *testing.T) {
	dir := t.TempDir()
	if err := WriteCNIConfig(dir, CNINetwork{PodCIDRs: []string{"10.244.1.7/24", "fd00:10:244:1::/64"}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, CNIConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var got cniConfList
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("conflist: %v", err)
	}
	if got.CNIVersion != "1.0.0" || got.Name != "skiff" || len(got.Plugins) != 2 {
		t.Fatalf("conflist = %+v", got)
	}
	bridge, portmap := got.Plugins[0], got.Plugins[1]
	if bridge.Type != "bridge" || bridge.Bridge != "cni0" || !bridge.IsGateway || bridge.IPMasq || !bridge.HairpinMode {
		t.Errorf("bridge plugin = %+v", bridge)
	}
	if bridge.IPAM.Type != "host-local" || bridge.IPAM.Ranges[0][0].Subnet != "10.244.1.0/24" || bridge.IPAM.Ranges[1][0].Subnet != "fd00:10:244:1::/64" {
		t.Errorf("ipam = %+v", bridge.IPAM)
	}
	if bridge.IPAM.Routes[0].Dst != "0.0.0.0/0" || bridge.IPAM.Routes[1].Dst != "::/0" {
		t.Errorf("routes = %+v", bridge.IPAM.Routes)
	}
	if portmap.Type != "portmap" || !portmap.Capabilities["portMappings"] {
		t.Errorf("portmap = %+v", portmap)
	}
	for _, bad := range [][]string{nil, {"not-a-cidr"}} {
		if err := WriteCNIConfig(dir, CNINetwork{PodCIDRs: bad}); err == nil {
			t.Errorf("WriteCNIConfig(%v) succeeded", bad)
		}
	}
}

func TestRenderOCIRuntime(t *testing.T) {
	tests := []struct {
		name         string
		runtime      string
		binary       string
		want, reject []string
	}{
		{
			name: "runc by default: the shim's own runc from PATH, state under the data dir",
			want: []string{`Root = "/data/n1/containerd/state/runc"`, `runtime_type = "io.containerd.runc.v2"`, `default_runtime_name = "runc"`},
			// The default renders as before --oci-runtime existed.
			reject: []string{"BinaryName"},
		},
		{
			name: "runc at a path", runtime: RuntimeRunc, binary: "/usr/sbin/runc",
			want: []string{`Root = "/data/n1/containerd/state/runc"`, `BinaryName = "/usr/sbin/runc"`},
		},
		{
			name: "crun: same shim and handler name, its own binary and state dir", runtime: RuntimeCrun, binary: "/usr/bin/crun",
			want: []string{
				`Root = "/data/n1/containerd/state/crun"`, `BinaryName = "/usr/bin/crun"`,
				`runtime_type = "io.containerd.runc.v2"`, `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]`,
				`SystemdCgroup = false`,
			},
			reject: []string{`state/runc"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{DataDir: "/data/n1", OCIRuntime: tc.runtime, OCIRuntimeBinary: tc.binary}.WithDefaults()
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate = %v", err)
			}
			text, err := c.Render()
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("config lacks %s\n%s", want, text)
				}
			}
			for _, bad := range tc.reject {
				if strings.Contains(text, bad) {
					t.Errorf("config has %s\n%s", bad, text)
				}
			}
		})
	}
}

func TestValidateOCIRuntime(t *testing.T) {
	tests := []struct {
		name            string
		runtime, binary string
		want            string
	}{
		{"unknown runtime", "youki", "/usr/bin/youki", "ociRuntime"},
		{"crun without its binary", RuntimeCrun, "", "ociRuntimeBinary: required"},
		{"relative binary", RuntimeCrun, "crun", "absolute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{DataDir: "/data", OCIRuntime: tc.runtime, OCIRuntimeBinary: tc.binary}.WithDefaults()
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

func TestRuntimeRootsAreApart(t *testing.T) {
	c := Default("/data/n1")
	seen := map[string]string{}
	for _, rt := range OCIRuntimes() {
		root := c.RuntimeRoot(rt)
		if !strings.HasPrefix(root, c.StateDir+"/") {
			t.Errorf("%s root %q is not under the state dir", rt, root)
		}
		if other, dup := seen[root]; dup {
			t.Errorf("%s and %s share %q", rt, other, root)
		}
		seen[root] = rt
	}
	if c.OCIRuntimeRoot() != c.RuncRoot() {
		t.Errorf("default runtime root %q, want runc's %q", c.OCIRuntimeRoot(), c.RuncRoot())
	}
}
