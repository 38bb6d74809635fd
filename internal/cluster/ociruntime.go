package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
)

// The OCI runtimes the node's own containerd can run containers with (--oci-runtime); both run
// under containerd's runc v2 shim.
const (
	OCIRuntimeRunc = containerd.RuntimeRunc
	OCIRuntimeCrun = containerd.RuntimeCrun
)

// runsOwnContainerd reports whether the node starts the kubelet with a containerd of its own.
func (c *Config) runsOwnContainerd() bool {
	return c.runsKubelet() && c.ContainerRuntimeEndpoint == ""
}

// validateOCIRuntimeOnPath is validateOCIRuntime against the real PATH and cgroup mounts.
func (c *Config) validateOCIRuntimeOnPath() []error {
	return c.validateOCIRuntime(ociHost{lookPath: exec.LookPath, readFile: os.ReadFile})
}

// ociHost is what validateOCIRuntime reads of the host.
type ociHost struct {
	lookPath func(string) (string, error)
	readFile func(string) ([]byte, error)
}

// hybridControllers lists the controllers of the cgroup2 hierarchy of a hybrid cgroup layout
// (cgroup v1 controllers under /sys/fs/cgroup, cgroup2 at /sys/fs/cgroup/unified); the file is
// absent on pure v1 and pure v2 hosts.
const hybridControllers = "/sys/fs/cgroup/unified/cgroup.controllers"

// validateOCIRuntime checks --oci-runtime: a known runtime, and, when it is not the default, one
// the node will use and can find (so a missing crun stops the node before anything starts).
func (c *Config) validateOCIRuntime(host ociHost) []error {
	switch c.OCIRuntime {
	case OCIRuntimeRunc:
		return nil
	case OCIRuntimeCrun:
	default:
		return []error{fmt.Errorf("--oci-runtime %q: want %s or %s", c.OCIRuntime, OCIRuntimeRunc, OCIRuntimeCrun)}
	}
	if c.ContainerRuntimeEndpoint != "" {
		return []error{fmt.Errorf("--oci-runtime %s configures skiff's own containerd: with --container-runtime-endpoint, choose the OCI runtime in that runtime's configuration", c.OCIRuntime)}
	}
	if !c.runsOwnContainerd() {
		return nil
	}
	if _, err := resolveOCIRuntime(c.OCIRuntime, host.lookPath); err != nil {
		return []error{err}
	}
	// crun (1.8, Debian bookworm's) refuses to create any container on a hybrid layout whose
	// cgroup2 hierarchy has a controller ("cgroups in hybrid mode not supported"), as on hosts
	// where hugetlb is not mounted as v1 and so sits in cgroup2: every pod would fail.
	if data, err := host.readFile(hybridControllers); err == nil && len(data) > 0 {
		return []error{fmt.Errorf("--oci-runtime crun: crun refuses hybrid cgroups while the cgroup2 hierarchy has controllers (%s: %q); mount them as cgroup v1 (e.g. mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb), boot with the unified hierarchy, or run skiff in a mount namespace without /sys/fs/cgroup/unified; or use --oci-runtime runc", hybridControllers, strings.TrimSpace(string(data)))}
	}
	return nil
}

// resolveOCIRuntime is the absolute path of the OCI runtime's executable, or an error naming the
// flag and how to install it.
func resolveOCIRuntime(runtime string, lookPath func(string) (string, error)) (string, error) {
	path, err := lookPath(runtime)
	if err != nil {
		return "", fmt.Errorf("--oci-runtime %s: the %s binary is not installed or not in PATH (Debian package %s; hack/install-runtime.sh installs it): %w", runtime, runtime, runtime, err)
	}
	// A relative PATH entry gives a relative path; the shim runs elsewhere.
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("--oci-runtime %s: %w", runtime, err)
	}
	return abs, nil
}

// withOCIRuntime sets the supervised containerd's OCI runtime from --oci-runtime. runc stays as
// before this flag existed (the shim runs "runc" from PATH); its absence is still reported here,
// naming the flag. crun gets its absolute path as the shim's BinaryName.
func withOCIRuntime(cfg *Config, ccfg containerd.Config, lookPath func(string) (string, error)) (containerd.Config, error) {
	runtime := cfg.OCIRuntime
	if runtime == "" {
		runtime = OCIRuntimeRunc
	}
	path, err := resolveOCIRuntime(runtime, lookPath)
	if err != nil {
		return ccfg, err
	}
	ccfg.OCIRuntime = runtime
	if runtime != OCIRuntimeRunc {
		ccfg.OCIRuntimeBinary = path
	}
	return ccfg, nil
}

// ociRuntimeForKubelet is withOCIRuntime with the real PATH, for a node about to start its own
// containerd.
func ociRuntimeForKubelet(cfg *Config, ccfg containerd.Config) (containerd.Config, error) {
	if cfg.ContainerRuntimeEndpoint != "" {
		return ccfg, nil
	}
	return withOCIRuntime(cfg, ccfg, exec.LookPath)
}
