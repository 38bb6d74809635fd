package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestDecideControlPlaneKubelet(t *testing.T) {
	cp := []Role{RoleEtcd, RoleControlPlane}
	etcdOnly := []Role{RoleEtcd}
	noRuntime := errors.New("containerd not in PATH")
	tests := []struct {
		name      string
		roles     []Role
		setting   KubeletSetting
		euid      int
		noRuntime error
		wantRun   bool
		reason    string // contained in the reason, or in the error with wantErr
		wantErr   bool
	}{
		{name: "worker always", roles: AllRoles, setting: ControlPlaneKubeletOff, euid: 1000, noRuntime: noRuntime, wantRun: true, reason: "worker role"},
		{name: "auto: root with a runtime", roles: cp, euid: 0, wantRun: true, reason: "root and a container runtime"},
		{name: "auto: etcd-only, root with a runtime", roles: etcdOnly, euid: 0, wantRun: true},
		{name: "auto: not root", roles: cp, euid: 1000, reason: "the kubelet needs root (effective uid 1000)"},
		{name: "auto: no runtime", roles: cp, euid: 0, noRuntime: noRuntime, reason: "no container runtime: containerd not in PATH"},
		{name: "auto: neither, root named first", roles: etcdOnly, euid: 1000, noRuntime: noRuntime, reason: "needs root"},
		{name: "off opts out where it could run", roles: cp, setting: ControlPlaneKubeletOff, euid: 0, reason: "--control-plane-kubelet=false"},
		{name: "off where it could not", roles: cp, setting: ControlPlaneKubeletOff, euid: 1000, noRuntime: noRuntime, reason: "--control-plane-kubelet=false"},
		{name: "on: root with a runtime", roles: cp, setting: ControlPlaneKubeletOn, euid: 0, wantRun: true, reason: "--control-plane-kubelet"},
		{name: "on: not root is an error", roles: cp, setting: ControlPlaneKubeletOn, euid: 1000, wantErr: true, reason: "--control-plane-kubelet: the kubelet needs root (effective uid 1000)"},
		{name: "on: no runtime is an error", roles: etcdOnly, setting: ControlPlaneKubeletOn, euid: 0, noRuntime: noRuntime, wantErr: true, reason: "--control-plane-kubelet: no container runtime: containerd not in PATH"},
		{name: "unknown setting", roles: cp, setting: "maybe", wantErr: true, reason: `--control-plane-kubelet "maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := decideControlPlaneKubelet(tt.roles, tt.setting, tt.euid, tt.noRuntime)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.reason) {
					t.Fatalf("error %v, want one containing %q", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.run != tt.wantRun || !strings.Contains(d.reason, tt.reason) {
				t.Errorf("decision %+v, want run=%v with a reason containing %q", d, tt.wantRun, tt.reason)
			}
		})
	}
}

func TestParseKubeletSetting(t *testing.T) {
	for in, want := range map[string]KubeletSetting{"true": ControlPlaneKubeletOn, "1": ControlPlaneKubeletOn, "false": ControlPlaneKubeletOff, "F": ControlPlaneKubeletOff, "auto": ControlPlaneKubeletAuto, "AUTO": ControlPlaneKubeletAuto} {
		if got, err := ParseKubeletSetting(in); err != nil || got != want {
			t.Errorf("ParseKubeletSetting(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseKubeletSetting("yes"); err == nil || !strings.Contains(err.Error(), "want true, false or auto") {
		t.Errorf("ParseKubeletSetting(yes): %v", err)
	}
}

func TestMissingRuntime(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		path    []string
		wantErr string
	}{
		{name: "containerd, shim and runc", path: []string{"containerd", "containerd-shim-runc-v2", "runc"}},
		{name: "crun asked for and present", cfg: Config{WorkerConfig: WorkerConfig{OCIRuntime: OCIRuntimeCrun}}, path: []string{"containerd", "containerd-shim-runc-v2", "crun"}},
		{name: "crun asked for, only runc", cfg: Config{WorkerConfig: WorkerConfig{OCIRuntime: OCIRuntimeCrun}}, path: []string{"containerd", "containerd-shim-runc-v2", "runc"}, wantErr: "crun not in PATH"},
		{name: "nothing installed", wantErr: "containerd, containerd-shim-runc-v2, runc not in PATH and no --container-runtime-endpoint"},
		{name: "an endpoint is a runtime", cfg: Config{WorkerConfig: WorkerConfig{ContainerRuntimeEndpoint: "unix:///run/containerd/containerd.sock"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.missingRuntime(fakePath(tt.path...))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// Default resolves the automatic setting once, in one log line; Validate refuses a forced
// setting the host cannot honour.
func TestControlPlaneKubeletDefaultAndValidate(t *testing.T) {
	runtime := fakePath("containerd", "containerd-shim-runc-v2", "runc")
	root := kubeletHost{euid: 0, lookPath: runtime}
	user := kubeletHost{euid: 1000, lookPath: runtime}
	bare := kubeletHost{euid: 0, lookPath: fakePath()}
	tests := []struct {
		name     string
		roles    []Role
		setting  KubeletSetting
		host     kubeletHost
		want     KubeletSetting
		wantLog  string // "": no line
		wantErr  string
		wantRuns bool
	}{
		{name: "auto on a root control plane with a runtime", roles: []Role{RoleEtcd, RoleControlPlane}, host: root, want: ControlPlaneKubeletOn, wantLog: "control-plane kubelet: on", wantRuns: true},
		{name: "auto as a user", roles: []Role{RoleEtcd, RoleControlPlane}, host: user, want: ControlPlaneKubeletOff, wantLog: `control-plane kubelet: off, the node registers no Node and runs no pods" node=n roles="[etcd controlplane]" reason="the kubelet needs root (effective uid 1000)"`},
		{name: "auto without a runtime", roles: []Role{RoleEtcd}, host: bare, want: ControlPlaneKubeletOff, wantLog: "no container runtime: containerd, containerd-shim-runc-v2, runc not in PATH"},
		{name: "off stays off, silently", roles: []Role{RoleControlPlane}, setting: ControlPlaneKubeletOff, host: root, want: ControlPlaneKubeletOff},
		{name: "on where it can", roles: []Role{RoleControlPlane}, setting: ControlPlaneKubeletOn, host: root, want: ControlPlaneKubeletOn, wantRuns: true},
		{name: "on as a user is refused", roles: []Role{RoleControlPlane}, setting: ControlPlaneKubeletOn, host: user, want: ControlPlaneKubeletOn, wantErr: "needs root", wantRuns: true},
		{name: "on without a runtime is refused", roles: []Role{RoleEtcd}, setting: ControlPlaneKubeletOn, host: bare, want: ControlPlaneKubeletOn, wantErr: "no container runtime", wantRuns: true},
		{name: "a worker is not asked", roles: AllRoles, host: user, want: ControlPlaneKubeletAuto, wantRuns: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			cfg := Config{Roles: tt.roles, NodeName: "n", Logger: slog.New(slog.NewTextHandler(&log, nil)), WorkerConfig: WorkerConfig{ControlPlaneKubelet: tt.setting}}
			cfg.defaultControlPlaneKubelet(tt.host)
			cfg.defaultControlPlaneKubelet(tt.host) // Default may run twice (a joining control plane's)
			if cfg.ControlPlaneKubelet != tt.want {
				t.Errorf("resolved to %q, want %q", cfg.ControlPlaneKubelet, tt.want)
			}
			if lines := strings.Count(log.String(), "\n"); (tt.wantLog == "" && lines != 0) || (tt.wantLog != "" && (lines != 1 || !strings.Contains(log.String(), tt.wantLog))) {
				t.Errorf("log %q, want one line containing %q", log.String(), tt.wantLog)
			}
			err := errors.Join(cfg.validateControlPlaneKubelet(tt.host)...)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("validate: %v, want %q", err, tt.wantErr)
			}
			if cfg.runsKubelet() != tt.wantRuns {
				t.Errorf("runsKubelet() = %v, want %v", cfg.runsKubelet(), tt.wantRuns)
			}
		})
	}
}
