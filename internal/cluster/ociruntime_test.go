package cluster

import (
	"bytes"
	"errors"
	"log/slog"
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
		{name: "unknown runtime", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "youki"}}, path: []string{"youki"}, wantErr: `--oci-runtime "youki": want auto, runc or crun`},
		{name: "auto is resolved by Default, not refused", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "auto"}}, cgroup2: "hugetlb\n"},
		{name: "crun on hybrid cgroups with a cgroup2 controller (the start moves it to v1)", cfg: Config{Roles: AllRoles, WorkerConfig: WorkerConfig{OCIRuntime: "crun"}}, path: []string{"crun"}, cgroup2: "hugetlb\n"},
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
		{name: "auto left unresolved is runc", runtime: "auto", path: []string{"runc", "crun"}, wantRuntime: "runc"},
		{name: "runc", runtime: "runc", path: []string{"runc", "crun"}, wantRuntime: "runc"},
		{name: "crun by absolute path", runtime: "crun", path: []string{"crun"}, wantRuntime: "crun", wantBinary: "/usr/bin/crun"},
		{name: "missing runc names the flag", runtime: "runc", wantErr: "--oci-runtime runc: the runc binary is not installed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := ociHost{lookPath: fakePath(tc.path...), readFile: noHybrid}
			got, err := withOCIRuntime(&Config{WorkerConfig: WorkerConfig{OCIRuntime: tc.runtime}}, base, host, noMount(t))
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

func TestChooseOCIRuntime(t *testing.T) {
	tests := []struct {
		name       string
		crun       bool
		cgroup2    string
		want       string
		wantReason string
	}{
		{name: "crun where the layout lets it", crun: true, want: "crun", wantReason: "crun is installed and this host's cgroup layout lets it"},
		{name: "runc without crun", crun: false, want: "runc", wantReason: "crun is not installed"},
		{name: "runc without crun on hybrid cgroups", crun: false, cgroup2: "hugetlb", want: "runc", wantReason: "crun is not installed"},
		{name: "crun on hybrid cgroups, its cgroup2 controllers moved to v1", crun: true, cgroup2: "hugetlb misc", want: "crun",
			wantReason: "refuses a hybrid cgroup layout whose cgroup2 hierarchy holds controllers (/sys/fs/cgroup/unified/cgroup.controllers: hugetlb misc), so they are mounted as cgroup v1 under /sys/fs/cgroup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := chooseOCIRuntime(tc.crun, strings.Fields(tc.cgroup2))
			if got.runtime != tc.want || !strings.Contains(got.reason, tc.wantReason) {
				t.Fatalf("chooseOCIRuntime(%v, %q) = %+v, want %s because %q", tc.crun, tc.cgroup2, got, tc.want, tc.wantReason)
			}
		})
	}
}

func TestCgroupV1Plan(t *testing.T) {
	tests := []struct {
		name, runtime, cgroup2, unmounted, want string
	}{
		{name: "crun on hybrid cgroups: its cgroup2 controllers moved to v1", runtime: "crun", cgroup2: "hugetlb misc", want: "hugetlb misc"},
		{name: "runc leaves cgroup2 as it is", runtime: "runc", cgroup2: "hugetlb"},
		{name: "crun where every controller is v1 and mounted", runtime: "crun"},
		{name: "a v1 controller unmounted here, with crun", runtime: "crun", unmounted: "hugetlb", want: "hugetlb"},
		{name: "a v1 controller unmounted here, with runc", runtime: "runc", cgroup2: "misc", unmounted: "hugetlb", want: "hugetlb"},
		{name: "each controller once", runtime: "crun", cgroup2: "hugetlb", unmounted: "hugetlb pids", want: "hugetlb pids"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(cgroupV1Plan(tc.runtime, strings.Fields(tc.cgroup2), strings.Fields(tc.unmounted)), " ")
			if got != tc.want {
				t.Fatalf("cgroupV1Plan(%s, %q, %q) = %q, want %q", tc.runtime, tc.cgroup2, tc.unmounted, got, tc.want)
			}
		})
	}
}

// noMount is a host where no controller needs moving: a mount fails the test.
func noMount(t *testing.T) func(string) error {
	return func(c string) error {
		t.Errorf("cgroup v1 mount of %s where none was needed", c)
		return nil
	}
}

// hostCgroups is this project's machines' /proc/cgroups once hugetlb is on a v1 hierarchy (10).
const hostCgroups = "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t2\t1\ncpu\t1\t2\t1\nmemory\t4\t428\t1\nnet_cls\t0\t2\t1\nhugetlb\t10\t2\t1\npids\t8\t2\t1\n"

// hostMounts are its cgroup mounts, hugetlb's last (cut off where a test wants it unmounted).
const hostMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
46 31 0:40 / /sys/fs/cgroup/hugetlb rw,relatime - cgroup cgroup rw,hugetlb
`

// movedElsewhere is a host whose hugetlb another mount namespace moved to a v1 hierarchy: out of
// cgroup2, with no mount of it here.
func movedElsewhere(path string) ([]byte, error) {
	switch path {
	case hybridControllers:
		return []byte("\n"), nil
	case "/proc/cgroups":
		return []byte(hostCgroups), nil
	case "/proc/self/mountinfo":
		return []byte(hostMounts[:strings.Index(hostMounts, "46 31")]), nil
	}
	return nil, os.ErrNotExist
}

func TestUnmountedV1Controllers(t *testing.T) {
	withoutHugetlb := hostMounts[:strings.Index(hostMounts, "46 31")]
	tests := []struct {
		name, cgroups, mounts, want string
	}{
		{name: "every v1 controller mounted", cgroups: hostCgroups, mounts: hostMounts},
		{name: "hugetlb on a v1 hierarchy mounted in another namespace", cgroups: hostCgroups, mounts: withoutHugetlb, want: "hugetlb"},
		{name: "hugetlb still in cgroup2 (hierarchy 0)", cgroups: strings.Replace(hostCgroups, "hugetlb\t10", "hugetlb\t0", 1), mounts: withoutHugetlb},
		{name: "a disabled controller", cgroups: strings.Replace(hostCgroups, "hugetlb\t10\t2\t1", "hugetlb\t10\t2\t0", 1), mounts: withoutHugetlb},
		{name: "a pure cgroup2 host", cgroups: "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t0\t80\t1\nmemory\t0\t80\t1\n", mounts: "25 23 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"},
		{name: "two controllers on one hierarchy", cgroups: hostCgroups + "cpuacct\t1\t2\t1\n", mounts: strings.Replace(hostMounts, "rw,cpu\n", "rw,cpu,cpuacct\n", 1)},
		{name: "nothing readable", cgroups: "", mounts: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(unmountedV1Controllers(tc.cgroups, tc.mounts), " "); got != tc.want {
				t.Fatalf("unmountedV1Controllers = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDefaultOCIRuntime: Default resolves auto from the host (once: a second Default keeps it),
// leaves a runtime the flag names, and the containerd's start says which and why.
func TestDefaultOCIRuntime(t *testing.T) {
	hybrid := func(path string) ([]byte, error) {
		if path == hybridControllers {
			return []byte("hugetlb\n"), nil
		}
		return nil, os.ErrNotExist
	}
	busy := errors.New("device or resource busy")
	tests := []struct {
		name     string
		cfg      WorkerConfig
		host     ociHost
		mountErr error // what moving a controller to cgroup v1 returns
		// want is Default's choice; started, the runtime the containerd got (want when empty).
		want, started string
		wantWhy       string
		wantMoved     string // the controllers moved to cgroup v1 at the containerd's start
		wantErr       string // the containerd's start refused
	}{
		{name: "auto with crun", cfg: WorkerConfig{OCIRuntime: "auto"}, host: ociHost{lookPath: fakePath("runc", "crun"), readFile: noHybrid}, want: "crun", wantWhy: "crun is installed"},
		{name: "auto on hybrid cgroups moves hugetlb to v1", cfg: WorkerConfig{OCIRuntime: "auto"}, host: ociHost{lookPath: fakePath("runc", "crun"), readFile: hybrid}, want: "crun", wantWhy: "so they are mounted as cgroup v1", wantMoved: "hugetlb"},
		{name: "auto on hybrid cgroups that cannot move", cfg: WorkerConfig{OCIRuntime: "auto"}, host: ociHost{lookPath: fakePath("runc", "crun"), readFile: hybrid}, mountErr: busy,
			want: "crun", started: "runc", wantWhy: "they could not be mounted as cgroup v1: cgroup v1 hugetlb: device or resource busy"},
		{name: "auto without crun", cfg: WorkerConfig{OCIRuntime: "auto"}, host: ociHost{lookPath: fakePath("runc"), readFile: noHybrid}, want: "runc", wantWhy: "crun is not installed"},
		{name: "runc named", cfg: WorkerConfig{OCIRuntime: "runc"}, host: ociHost{lookPath: fakePath("runc", "crun"), readFile: hybrid}, want: "runc"},
		{name: "crun named", cfg: WorkerConfig{OCIRuntime: "crun"}, host: ociHost{lookPath: fakePath("runc", "crun"), readFile: noHybrid}, want: "crun"},
		{name: "crun named on hybrid cgroups", cfg: WorkerConfig{OCIRuntime: "crun"}, host: ociHost{lookPath: fakePath("runc", "crun"), readFile: hybrid}, want: "crun", wantMoved: "hugetlb"},
		{name: "crun named on hybrid cgroups that cannot move", cfg: WorkerConfig{OCIRuntime: "crun"}, host: ociHost{lookPath: fakePath("runc", "crun"), readFile: hybrid}, mountErr: busy,
			want: "crun", wantErr: "--oci-runtime crun: crun refuses hybrid cgroups while the cgroup2 hierarchy has controllers (/sys/fs/cgroup/unified/cgroup.controllers), and moving them to cgroup v1 failed"},
		{name: "an external runtime", cfg: WorkerConfig{OCIRuntime: "auto", ContainerRuntimeEndpoint: "unix:///run/containerd/containerd.sock"}, host: ociHost{lookPath: fakePath("crun"), readFile: hybrid}, want: "runc", wantWhy: "--container-runtime-endpoint"},
		{name: "auto where another mount namespace moved hugetlb", cfg: WorkerConfig{OCIRuntime: "auto"}, host: ociHost{lookPath: fakePath("runc", "crun"), readFile: movedElsewhere}, want: "crun", wantWhy: "lets it create containers", wantMoved: "hugetlb"},
		{name: "runc where another mount namespace moved hugetlb", cfg: WorkerConfig{OCIRuntime: "runc"}, host: ociHost{lookPath: fakePath("runc", "crun"), readFile: movedElsewhere}, want: "runc", wantMoved: "hugetlb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			cfg := Config{Roles: AllRoles, WorkerConfig: tc.cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			cfg.defaultOCIRuntime(tc.host)
			cfg.defaultOCIRuntime(tc.host)
			// A fallback at the start (started) says its own why in the log, checked below.
			if cfg.OCIRuntime != tc.want || (tc.started == "" && !strings.Contains(cfg.ociRuntimeReason, tc.wantWhy)) {
				t.Fatalf("runtime %q because %q, want %q because %q", cfg.OCIRuntime, cfg.ociRuntimeReason, tc.want, tc.wantWhy)
			}
			if tc.wantWhy == "" && cfg.ociRuntimeReason != "" {
				t.Fatalf("a runtime the flag names got a reason: %q", cfg.ociRuntimeReason)
			}
			if tc.cfg.ContainerRuntimeEndpoint != "" {
				// No containerd of its own to configure: nothing is set, nothing moved to cgroup v1.
				if got, err := withOCIRuntime(&cfg, containerd.Config{}, tc.host, noMount(t)); err != nil || got.OCIRuntime != "" {
					t.Fatalf("an external runtime's node configured its containerd: %+v, %v", got, err)
				}
				return
			}
			var moved []string
			ccfg, err := withOCIRuntime(&cfg, containerd.Config{}, tc.host, func(c string) error {
				moved = append(moved, c)
				return tc.mountErr
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.mountErr == nil && strings.Join(moved, " ") != tc.wantMoved {
				t.Fatalf("moved %q to cgroup v1, want %q", moved, tc.wantMoved)
			}
			started := tc.started
			if started == "" {
				started = tc.want
			}
			if ccfg.OCIRuntime != started {
				t.Fatalf("containerd runs %q, want %q", ccfg.OCIRuntime, started)
			}
			wantWhy := tc.wantWhy
			if wantWhy == "" {
				wantWhy = "--oci-runtime " + started
			}
			if line := logs.String(); !strings.Contains(line, "OCI runtime of the node's containerd") || !strings.Contains(line, "runtime="+started) || !strings.Contains(line, wantWhy) {
				t.Fatalf("log at containerd's configuration: %s", line)
			}
		})
	}
}
