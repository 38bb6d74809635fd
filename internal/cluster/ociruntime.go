package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
)

// The OCI runtimes the node's own containerd can run containers with (--oci-runtime); both run
// under containerd's runc v2 shim. OCIRuntimeAuto (the default) chooses one at start
// (chooseOCIRuntime).
const (
	OCIRuntimeRunc = containerd.RuntimeRunc
	OCIRuntimeCrun = containerd.RuntimeCrun
	OCIRuntimeAuto = "auto"
)

// runsOwnContainerd reports whether the node starts the kubelet with a containerd of its own.
func (c *Config) runsOwnContainerd() bool {
	return c.runsKubelet() && c.ContainerRuntimeEndpoint == ""
}

// validateOCIRuntimeOnPath is validateOCIRuntime against the real PATH and cgroup mounts.
func (c *Config) validateOCIRuntimeOnPath() []error {
	return c.validateOCIRuntime(realOCIHost())
}

// ociHost is what validateOCIRuntime and defaultOCIRuntime read of the host.
type ociHost struct {
	lookPath func(string) (string, error)
	readFile func(string) ([]byte, error)
}

// realOCIHost is the real PATH and cgroup mounts.
func realOCIHost() ociHost { return ociHost{lookPath: exec.LookPath, readFile: os.ReadFile} }

// cgroup2ControllerList is cgroup2Controllers as a list.
func (h ociHost) cgroup2ControllerList() []string { return strings.Fields(h.cgroup2Controllers()) }

// unmountedV1 are the controllers bound to a cgroup v1 hierarchy that this mount namespace has
// no mount of (unmountedV1Controllers), nil when the host's files cannot be read.
func (h ociHost) unmountedV1() []string {
	cgroups, err := h.readFile("/proc/cgroups")
	if err != nil {
		return nil
	}
	mounts, err := h.readFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return unmountedV1Controllers(string(cgroups), string(mounts))
}

// unmountedV1Controllers reads /proc/cgroups and /proc/self/mountinfo (pure): the enabled
// controllers bound to a cgroup v1 hierarchy (a nonzero hierarchy id) that no cgroup mount here
// names. A node in a mount namespace of its own (the conformance harness's) finds hugetlb so when
// a node in another namespace moved it out of cgroup2: the kernel binds the controller to the v1
// hierarchy for the whole machine, but the mount is only in that namespace. containerd's cgroup
// v1 stats fail for every container where a controller of /proc/self/cgroup has no mount, so the
// node mounts it again (the same hierarchy) before its containerd starts.
func unmountedV1Controllers(procCgroups, mountinfo string) []string {
	mounted := map[string]bool{}
	for _, line := range strings.Split(mountinfo, "\n") {
		_, after, ok := strings.Cut(line, " - ")
		if f := strings.Fields(after); ok && len(f) >= 3 && f[0] == "cgroup" {
			for _, opt := range strings.Split(f[2], ",") {
				mounted[opt] = true
			}
		}
	}
	var out []string
	for _, line := range strings.Split(procCgroups, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || strings.HasPrefix(f[0], "#") || f[1] == "0" || f[3] != "1" || mounted[f[0]] {
			continue
		}
		out = append(out, f[0])
	}
	return out
}

// cgroup2Controllers is what the host's hybrid layout has in its cgroup2 hierarchy ("" on a pure
// v1 or v2 host, or a hybrid one whose cgroup2 holds no controller).
func (h ociHost) cgroup2Controllers() string {
	data, err := h.readFile(hybridControllers)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// ociChoice is the OCI runtime --oci-runtime auto chose, and why (for the log).
type ociChoice struct {
	runtime, reason string
}

// chooseOCIRuntime decides --oci-runtime auto from the host (pure): crun, which starts a container
// with about a third of runc's CPU (docs/bench/pods.md), where it is installed; on a hybrid cgroup
// layout whose cgroup2 hierarchy holds controllers, which crun refuses, together with moving them
// to cgroup v1 (cgroupV1Plan; withOCIRuntime falls back to runc if that fails); else runc.
func chooseOCIRuntime(crunInstalled bool, cgroup2Controllers []string) ociChoice {
	switch {
	case !crunInstalled:
		return ociChoice{runtime: OCIRuntimeRunc, reason: "crun is not installed (Debian package crun): it would start containers with about a third of runc's CPU"}
	case len(cgroup2Controllers) > 0:
		return ociChoice{runtime: OCIRuntimeCrun, reason: fmt.Sprintf(
			"crun is installed: it starts containers with about a third of runc's CPU; it refuses a hybrid cgroup layout whose cgroup2 hierarchy holds controllers (%s: %s), so they are mounted as cgroup v1 under %s, as systemd's hybrid layout has them",
			hybridControllers, strings.Join(cgroup2Controllers, " "), cgroupV1Root)}
	default:
		return ociChoice{runtime: OCIRuntimeCrun, reason: "crun is installed and this host's cgroup layout lets it create containers: it starts them with about a third of runc's CPU"}
	}
}

// defaultOCIRuntime resolves --oci-runtime auto to the runtime chooseOCIRuntime picks on host,
// keeping why for the log line of the containerd's start (ociRuntimeForKubelet). An external runtime (--container-runtime-endpoint) needs none.
func (c *Config) defaultOCIRuntime(host ociHost) {
	if c.OCIRuntime != OCIRuntimeAuto {
		return
	}
	if c.ContainerRuntimeEndpoint != "" {
		c.OCIRuntime = OCIRuntimeRunc
		c.ociRuntimeReason = "unused: --container-runtime-endpoint names the container runtime"
		return
	}
	_, err := host.lookPath(OCIRuntimeCrun)
	choice := chooseOCIRuntime(err == nil, host.cgroup2ControllerList())
	c.OCIRuntime, c.ociRuntimeReason = choice.runtime, choice.reason
}

// cgroupV1Plan decides (pure) which controllers the node's containerd start mounts as cgroup v1:
// for crun, those of a hybrid layout's cgroup2 hierarchy (cgroup2), which crun refuses (auto's
// choice and --oci-runtime crun alike); for any runtime, those bound to a v1 hierarchy elsewhere
// but not mounted in this mount namespace (unmountedV1, see unmountedV1Controllers).
func cgroupV1Plan(runtime string, cgroup2, unmountedV1 []string) []string {
	var plan []string
	if runtime == OCIRuntimeCrun {
		plan = append(plan, cgroup2...)
	}
	for _, c := range unmountedV1 {
		if !slices.Contains(plan, c) {
			plan = append(plan, c)
		}
	}
	return plan
}

// hybridControllers lists the controllers of the cgroup2 hierarchy of a hybrid cgroup layout
// (cgroup v1 controllers under /sys/fs/cgroup, cgroup2 at /sys/fs/cgroup/unified); the file is
// absent on pure v1 and pure v2 hosts.
const hybridControllers = "/sys/fs/cgroup/unified/cgroup.controllers"

// validateOCIRuntime checks --oci-runtime: a known runtime, and, when it is not the default, one
// the node will use and can find (so a missing crun stops the node before anything starts).
func (c *Config) validateOCIRuntime(host ociHost) []error {
	switch c.OCIRuntime {
	case OCIRuntimeRunc, OCIRuntimeAuto:
		return nil // auto: Default resolves it to a runtime that works here
	case OCIRuntimeCrun:
	default:
		return []error{fmt.Errorf("--oci-runtime %q: want %s, %s or %s", c.OCIRuntime, OCIRuntimeAuto, OCIRuntimeRunc, OCIRuntimeCrun)}
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
	// A hybrid layout whose cgroup2 hierarchy has controllers, which crun refuses, is not refused
	// here: the node moves them to cgroup v1 before its containerd starts (withOCIRuntime), and
	// stops there, naming the flag, if it cannot.
	return nil
}

// resolvedOCIRuntime is the runtime the node's containerd runs: --oci-runtime, or runc where it
// is unset or still auto (a Config that skipped Default; Default resolves auto on the host).
func (c *Config) resolvedOCIRuntime() string {
	if c.OCIRuntime == "" || c.OCIRuntime == OCIRuntimeAuto {
		return OCIRuntimeRunc
	}
	return c.OCIRuntime
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

// withOCIRuntime sets the supervised containerd's OCI runtime from --oci-runtime, and says in the
// log which and why. runc stays as
// before this flag existed (the shim runs "runc" from PATH); its absence is still reported here,
// naming the flag. crun gets its absolute path as the shim's BinaryName. First it mounts what
// cgroupV1Plan decides from host (mountV1). A node on an external runtime
// (--container-runtime-endpoint) has no containerd of its own: nothing to set or mount.
func withOCIRuntime(cfg *Config, ccfg containerd.Config, host ociHost, mountV1 func(controller string) error) (containerd.Config, error) {
	if cfg.ContainerRuntimeEndpoint != "" {
		return ccfg, nil
	}
	runtime := cfg.resolvedOCIRuntime()
	reason := cfg.ociRuntimeReason
	if reason == "" {
		reason = "--oci-runtime " + runtime
	}
	toV1 := cgroupV1Plan(runtime, host.cgroup2ControllerList(), host.unmountedV1())
	if err := moveToCgroupV1(toV1, mountV1); err != nil {
		switch {
		case runtime != OCIRuntimeCrun:
			// runc runs on a hybrid layout as it is; only the containers' stats miss a controller
			// another mount namespace moved.
			if cfg.Logger != nil {
				cfg.Logger.Warn("cgroup v1 controllers not mounted: containerd's cgroup stats may fail", "controllers", toV1, "err", err)
			}
		case cfg.ociRuntimeReason == "":
			return ccfg, fmt.Errorf("--oci-runtime crun: crun refuses hybrid cgroups while the cgroup2 hierarchy has controllers (%s), and moving them to cgroup v1 failed (boot with the unified hierarchy, or use --oci-runtime runc): %w", hybridControllers, err)
		default:
			runtime, reason = OCIRuntimeRunc, fmt.Sprintf("crun is installed but refuses this hybrid cgroup layout, whose cgroup2 hierarchy holds controllers (%s: %s), and they could not be mounted as cgroup v1: %v", hybridControllers, strings.Join(toV1, " "), err)
		}
	}
	path, err := resolveOCIRuntime(runtime, host.lookPath)
	if err != nil {
		return ccfg, err
	}
	ccfg.OCIRuntime = runtime
	if runtime != OCIRuntimeRunc {
		ccfg.OCIRuntimeBinary = path
	}
	if cfg.Logger != nil {
		cfg.Logger.Info("OCI runtime of the node's containerd", "runtime", runtime, "reason", reason)
	}
	return ccfg, nil
}

// moveToCgroupV1 mounts each controller as cgroup v1 (mountV1), the first failure ending it.
func moveToCgroupV1(controllers []string, mountV1 func(controller string) error) error {
	for _, c := range controllers {
		if err := mountV1(c); err != nil {
			return fmt.Errorf("cgroup v1 %s: %w", c, err)
		}
	}
	return nil
}

// ociRuntimeForKubelet is withOCIRuntime with the real PATH and cgroup mounts, for a node about to
// start its own containerd.
func ociRuntimeForKubelet(cfg *Config, ccfg containerd.Config) (containerd.Config, error) {
	return withOCIRuntime(cfg, ccfg, realOCIHost(), mountCgroupV1)
}
