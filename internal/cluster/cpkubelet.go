package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// KubeletSetting is --control-plane-kubelet: whether a node without the worker role runs the
// kubelet (with containerd, the pod network, cluster DNS and the service proxy) and so registers
// a Node labelled with its roles and tainted (nodeTaints).
type KubeletSetting string

const (
	// ControlPlaneKubeletAuto, the default, runs the kubelet where the node can: as root, with a
	// container runtime. Default resolves it to ControlPlaneKubeletOn or ControlPlaneKubeletOff.
	ControlPlaneKubeletAuto KubeletSetting = ""
	// ControlPlaneKubeletOn always runs it: a node that cannot is refused at start.
	ControlPlaneKubeletOn KubeletSetting = "true"
	// ControlPlaneKubeletOff never runs it: the node registers no Node.
	ControlPlaneKubeletOff KubeletSetting = "false"
)

// ParseKubeletSetting reads a --control-plane-kubelet value: "auto", or a boolean in
// strconv.ParseBool's spellings.
func ParseKubeletSetting(v string) (KubeletSetting, error) {
	if strings.EqualFold(v, "auto") {
		return ControlPlaneKubeletAuto, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return "", fmt.Errorf("want true, false or auto, not %q", v)
	}
	if b {
		return ControlPlaneKubeletOn, nil
	}
	return ControlPlaneKubeletOff, nil
}

// String is the setting as the flag takes it.
func (s KubeletSetting) String() string {
	if s == ControlPlaneKubeletAuto {
		return "auto"
	}
	return string(s)
}

// runsKubelet reports whether the node runs the kubelet: it has the worker role, or
// --control-plane-kubelet is (or, after Default, resolved to) on.
func (c *Config) runsKubelet() bool {
	return c.HasRole(RoleWorker) || c.ControlPlaneKubelet == ControlPlaneKubeletOn
}

// kubeletDecision is whether a node runs the kubelet, and why (for the log and for errors).
type kubeletDecision struct {
	run    bool
	reason string
}

// decideControlPlaneKubelet decides whether a node with roles runs the kubelet under setting,
// given its effective uid and why it has no container runtime (nil: it has one). A worker always
// runs it; a forced setting the node cannot honour is an error.
func decideControlPlaneKubelet(roles []Role, setting KubeletSetting, euid int, noRuntime error) (kubeletDecision, error) {
	for _, r := range roles {
		if r == RoleWorker {
			return kubeletDecision{run: true, reason: "the node has the worker role"}, nil
		}
	}
	var cannot string
	switch {
	case euid != 0:
		cannot = fmt.Sprintf("the kubelet needs root (effective uid %d)", euid)
	case noRuntime != nil:
		cannot = "no container runtime: " + noRuntime.Error()
	}
	switch setting {
	case ControlPlaneKubeletOff:
		return kubeletDecision{reason: "--control-plane-kubelet=false"}, nil
	case ControlPlaneKubeletOn:
		if cannot != "" {
			return kubeletDecision{}, fmt.Errorf("--control-plane-kubelet: %s; run as root with a container runtime, or leave the flag out (the node then runs the kubelet only where it can)", cannot)
		}
		return kubeletDecision{run: true, reason: "--control-plane-kubelet"}, nil
	case ControlPlaneKubeletAuto:
		if cannot != "" {
			return kubeletDecision{reason: cannot}, nil
		}
		return kubeletDecision{run: true, reason: "root and a container runtime"}, nil
	}
	return kubeletDecision{}, fmt.Errorf("--control-plane-kubelet %q: want true, false or auto", string(setting))
}

// kubeletHost is what the decision reads of the host.
type kubeletHost struct {
	euid     int
	lookPath func(string) (string, error)
}

// realKubeletHost is the process's effective uid and PATH.
func realKubeletHost() kubeletHost { return kubeletHost{euid: os.Geteuid(), lookPath: exec.LookPath} }

// missingRuntime says why the node has no container runtime for a kubelet (nil: it has one):
// --container-runtime-endpoint names one; else skiff supervises containerd, which needs its
// binary, the runc v2 shim and the OCI runtime of --oci-runtime on PATH.
func (c *Config) missingRuntime(lookPath func(string) (string, error)) error {
	if c.ContainerRuntimeEndpoint != "" {
		return nil
	}
	var missing []string
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2"} {
		if _, err := lookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	runtime := c.resolvedOCIRuntime()
	if _, err := lookPath(runtime); err != nil {
		missing = append(missing, runtime)
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s not in PATH and no --container-runtime-endpoint (hack/install-runtime.sh installs containerd and runc)", strings.Join(missing, ", "))
}

// defaultControlPlaneKubelet resolves --control-plane-kubelet's automatic setting on a node
// without the worker role to on or off, saying which and why in one log line.
func (c *Config) defaultControlPlaneKubelet(host kubeletHost) {
	if c.HasRole(RoleWorker) || c.ControlPlaneKubelet != ControlPlaneKubeletAuto {
		return
	}
	// The automatic setting is never an error.
	d, _ := decideControlPlaneKubelet(c.Roles, ControlPlaneKubeletAuto, host.euid, c.missingRuntime(host.lookPath))
	if d.run {
		c.ControlPlaneKubelet = ControlPlaneKubeletOn
		c.Logger.Info("control-plane kubelet: on, the node registers a tainted Node (--control-plane-kubelet=false opts out)", "node", c.NodeName, "roles", c.Roles, "reason", d.reason)
		return
	}
	c.ControlPlaneKubelet = ControlPlaneKubeletOff
	c.Logger.Info("control-plane kubelet: off, the node registers no Node and runs no pods", "node", c.NodeName, "roles", c.Roles, "reason", d.reason)
}

// validateControlPlaneKubelet refuses --control-plane-kubelet=true on a node that cannot run the
// kubelet (and a setting that is none of true, false, auto).
func (c *Config) validateControlPlaneKubelet(host kubeletHost) []error {
	if c.HasRole(RoleWorker) || c.ControlPlaneKubelet == ControlPlaneKubeletOff {
		return nil
	}
	if c.ControlPlaneKubelet == ControlPlaneKubeletAuto {
		return nil // Default resolves it; a Config that skipped Default runs no kubelet
	}
	_, err := decideControlPlaneKubelet(c.Roles, c.ControlPlaneKubelet, host.euid, c.missingRuntime(host.lookPath))
	if err != nil {
		return []error{err}
	}
	return nil
}
