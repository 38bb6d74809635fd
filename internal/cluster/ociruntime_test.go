package cluster

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
)

// fakePath finds only the named binaries, under /usr/bin.
func fakePath(present ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, p := range present {
			if p == name {
				return "/usr/bin/" + name, nil
			}
		}
		return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
	}
}

// noHybrid is a host without a hybrid cgroup layout.
func noHybrid(string) ([]byte, error) { return nil, os.ErrNotExist }

func TestValidateOCIRuntime(t *testing.T) {
	join := []Role{RoleWorker}
	tests := []struct {
		name    string
		cfg     Config
		path    []string
		cgroup2 string
		wantErr string
	}{
		{name: "runc is not looked up here (the kubelet's start does)", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "runc"}}},
		{name: "crun present", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "crun"}}, path: []string{"crun"}},
		{name: "crun missing names the flag", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "crun"}}, path: []string{"runc"}, wantErr: "--oci-runtime crun: the crun binary is not installed"},
		{name: "crun missing on a worker-only node", cfg: Config{Roles: join, WorkerConfig: WorkerConfig{OCIRuntime: "crun"}}, wantErr: "--oci-runtime crun"},
		{name: "crun is not needed without a kubelet", cfg: Config{Roles: []Role{RoleEtcd, RoleControlPlane}, WorkerConfig: WorkerConfig{OCIRuntime: "crun"}}},
		{name: "crun with the control plane's kubelet", cfg: Config{Roles: []Role{RoleEtcd, RoleControlPlane}, WorkerConfig: WorkerConfig{OCIRuntime: "crun", ControlPlaneKubelet: ControlPlaneKubeletOn}}, wantErr: "not installed"},
		{name: "unknown runtime", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "youki"}}, path: []string{"youki"}, wantErr: `--oci-runtime "youki": want runc or crun`},
		{name: "crun on hybrid cgroups with a cgroup2 controller", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "crun"}}, path: []string{"crun"}, cgroup2: "hugetlb\n", wantErr: `crun refuses hybrid cgroups while the cgroup2 hierarchy has controllers (/sys/fs/cgroup/unified/cgroup.controllers: "hugetlb")`},
		{name: "runc on hybrid cgroups", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "runc"}}, path: []string{"runc"}, cgroup2: "hugetlb\n"},
		{name: "crun with an external runtime", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "crun", ContainerRuntimeEndpoint: "unix:///run/containerd/containerd.sock"}}, path: []string{"crun"}, wantErr: "--container-runtime-endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := ociHost{lookPath: fakePath(tc.path...), readFile: noHybrid}
			if tc.cgroup2 != "" {
				host.readFile = func(path string) ([]byte, error) {
					if path != hybridControllers {
						return nil, os.ErrNotExist
					}
					return []byte(tc.cgroup2), nil
				}
			}
			err := errors.Join(tc.cfg.validateOCIRuntime(host)...)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestWithOCIRuntime(t *testing.T) {
	base := containerd.Config{DataDir: "/data/n1/kubelet"}
	tests := []struct {
		name        string
		runtime     string
		path        []string
		wantRuntime string
		wantBinary  string
		wantErr     string
	}{
		{name: "default runc keeps the shim's own lookup", runtime: "", path: []string{"runc"}, wantRuntime: "runc"},
		{name: "runc", runtime: "runc", path: []string{"runc", "crun"}, wantRuntime: "runc"},
		{name: "crun by absolute path", runtime: "crun", path: []string{"crun"}, wantRuntime: "crun", wantBinary: "/usr/bin/crun"},
		{name: "missing runc names the flag", runtime: "runc", wantErr: "--oci-runtime runc: the runc binary is not installed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withOCIRuntime(&Config{WorkerConfig: WorkerConfig{OCIRuntime: tc.runtime}}, base, fakePath(tc.path...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.OCIRuntime != tc.wantRuntime || got.OCIRuntimeBinary != tc.wantBinary {
				t.Fatalf("runtime %q binary %q, want %q %q", got.OCIRuntime, got.OCIRuntimeBinary, tc.wantRuntime, tc.wantBinary)
			}
			if err := got.WithDefaults().Validate(); err != nil {
				t.Fatalf("containerd config: %v", err)
			}
		})
	}
}
