package containerd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/skiff-sh/skiff/internal/cni"
	"github.com/skiff-sh/skiff/internal/images"
)

// Config describes one supervised containerd instance.
type Config struct {
	// DataDir is the node's data dir; containerd's files live under
	// DataDir/containerd. Required.
	DataDir string
	// Binary is the containerd executable; default "containerd" from PATH.
	Binary string
	// RootDir is containerd's persistent root; default DataDir/containerd/root.
	RootDir string
	// StateDir is containerd's runtime state (sockets, shim bundles); default
	// DataDir/containerd/state.
	StateDir string
	// Address is the gRPC (and CRI) unix socket; default StateDir/containerd.sock.
	Address string
	// SandboxImage is the pause image every pod sandbox runs; it must be
	// present locally (imported), no registry is assumed.
	SandboxImage string
	// CNIBinDir holds the CNI plugins; default /usr/lib/cni (Debian), or
	// DataDir/containerd/cni/bin with SkiffCNIBinary.
	CNIBinDir string
	// SkiffCNIBinary, when set, is the skiff executable serving as the pod
	// network's CNI plugin (internal/cni): WriteFiles fills CNIBinDir with a
	// link named after the plugin's type to it and links to every plugin of
	// StockCNIBinDir (loopback, portmap, ...).
	SkiffCNIBinary string
	// StockCNIBinDir holds the distribution's CNI plugins; default /usr/lib/cni.
	StockCNIBinDir string
	// CNIConfDir holds this node's CNI network list; default
	// DataDir/containerd/cni/net.d. containerd reloads it live.
	CNIConfDir string
	// StreamServerAddress is where the CRI streaming server (exec, attach,
	// port-forward) listens; it must be reachable by the kubelet. Default
	// 127.0.0.1.
	StreamServerAddress string
	// StreamServerPort is the streaming server's port; "0" picks a free one.
	StreamServerPort string
	// Snapshotter is the CRI snapshotter; default overlayfs.
	Snapshotter string
	// OCIRuntime is the OCI runtime containerd's runc v2 shim runs containers with: RuntimeRunc
	// (default) or RuntimeCrun, a drop-in for it. The CRI runtime handler stays named "runc"
	// either way; each keeps its state in a directory of its own (RuntimeRoot).
	OCIRuntime string
	// OCIRuntimeBinary is the OCI runtime's executable, given to the shim as BinaryName; empty:
	// the shim runs "runc" from its PATH (RuntimeRunc only; RuntimeCrun needs it set).
	OCIRuntimeBinary string
	// NetNSPath, when set, runs containerd inside that network namespace
	// (through nsenter, which keeps the host's /sys so cgroups stay visible).
	NetNSPath string
	// RegistryConfigDir holds per-registry hosts.toml files (mirrors, plain
	// HTTP registries); default DataDir/containerd/certs.d.
	RegistryConfigDir string
	// StartTimeout bounds the wait for the socket after each start.
	StartTimeout time.Duration
	// StopTimeout is how long containerd gets after SIGTERM before SIGKILL.
	StopTimeout time.Duration
	// RestartBackoff is the first delay before restarting a crashed
	// containerd; it doubles up to MaxRestartBackoff and resets after
	// containerd ran for BackoffReset.
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	BackoffReset      time.Duration
}

// Default returns a Config for dataDir with every optional field filled in.
func Default(dataDir string) Config {
	c := Config{DataDir: dataDir}
	c.fillDefaults()
	return c
}

// WithDefaults returns c with unset optional fields filled in.
func (c Config) WithDefaults() Config {
	c.fillDefaults()
	return c
}

func (c *Config) fillDefaults() {
	base := filepath.Join(c.DataDir, "containerd")
	set := func(field *string, value string) {
		if *field == "" {
			*field = value
		}
	}
	set(&c.Binary, "containerd")
	set(&c.RootDir, filepath.Join(base, "root"))
	set(&c.StateDir, filepath.Join(base, "state"))
	set(&c.Address, filepath.Join(c.StateDir, "containerd.sock"))
	set(&c.SandboxImage, images.PauseImage)
	set(&c.StockCNIBinDir, "/usr/lib/cni")
	if c.SkiffCNIBinary != "" {
		set(&c.CNIBinDir, filepath.Join(base, "cni", "bin"))
	}
	set(&c.CNIBinDir, c.StockCNIBinDir)
	set(&c.CNIConfDir, filepath.Join(base, "cni", "net.d"))
	set(&c.StreamServerAddress, "127.0.0.1")
	set(&c.StreamServerPort, "0")
	set(&c.Snapshotter, "overlayfs")
	set(&c.OCIRuntime, RuntimeRunc)
	set(&c.RegistryConfigDir, filepath.Join(base, "certs.d"))
	setDuration := func(field *time.Duration, value time.Duration) {
		if *field == 0 {
			*field = value
		}
	}
	setDuration(&c.StartTimeout, 30*time.Second)
	setDuration(&c.StopTimeout, 10*time.Second)
	setDuration(&c.RestartBackoff, time.Second)
	setDuration(&c.MaxRestartBackoff, 30*time.Second)
	setDuration(&c.BackoffReset, time.Minute)
}

// unixSocketPathMax is the size of sun_path on Linux, including the NUL.
const unixSocketPathMax = 108

// Validate reports every problem of a defaulted Config.
func (c Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("dataDir: required"))
	} else if !filepath.IsAbs(c.DataDir) {
		errs = append(errs, fmt.Errorf("dataDir: %q must be an absolute path", c.DataDir))
	}
	for name, dir := range map[string]string{"rootDir": c.RootDir, "stateDir": c.StateDir, "cniBinDir": c.CNIBinDir, "stockCNIBinDir": c.StockCNIBinDir, "skiffCNIBinary": c.SkiffCNIBinary, "cniConfDir": c.CNIConfDir, "registryConfigDir": c.RegistryConfigDir} {
		if dir != "" && !filepath.IsAbs(dir) {
			errs = append(errs, fmt.Errorf("%s: %q must be an absolute path", name, dir))
		}
	}
	if len(c.Address) >= unixSocketPathMax {
		errs = append(errs, fmt.Errorf("address: %q is longer than a unix socket path may be (%d)", c.Address, unixSocketPathMax-1))
	}
	if c.StreamServerAddress != "" {
		if _, err := netip.ParseAddr(c.StreamServerAddress); err != nil {
			errs = append(errs, fmt.Errorf("streamServerAddress: %q is not an IP address", c.StreamServerAddress))
		}
	}
	if c.Snapshotter != "" && c.Snapshotter != "overlayfs" && c.Snapshotter != "native" {
		errs = append(errs, fmt.Errorf("snapshotter: %q is not one of overlayfs, native", c.Snapshotter))
	}
	switch c.OCIRuntime {
	case "", RuntimeRunc:
	case RuntimeCrun:
		if c.OCIRuntimeBinary == "" {
			errs = append(errs, errors.New("ociRuntimeBinary: required for crun"))
		}
	default:
		errs = append(errs, fmt.Errorf("ociRuntime: %q is not one of %s, %s", c.OCIRuntime, RuntimeRunc, RuntimeCrun))
	}
	if c.OCIRuntimeBinary != "" && !filepath.IsAbs(c.OCIRuntimeBinary) {
		errs = append(errs, fmt.Errorf("ociRuntimeBinary: %q must be an absolute path", c.OCIRuntimeBinary))
	}
	if c.RestartBackoff < 0 || c.MaxRestartBackoff < c.RestartBackoff {
		errs = append(errs, fmt.Errorf("restartBackoff: %v must be >= 0 and <= maxRestartBackoff %v", c.RestartBackoff, c.MaxRestartBackoff))
	}
	return errors.Join(errs...)
}

// ConfigPath is where the generated containerd configuration is written.
func (c Config) ConfigPath() string {
	return filepath.Join(c.DataDir, "containerd", "config.toml")
}

// The OCI runtimes the runc v2 shim can run (Config.OCIRuntime).
const (
	RuntimeRunc = "runc"
	RuntimeCrun = "crun"
)

// RuncRoot is the per-instance runc state directory, so instances on one host
// do not share /run/containerd/runc.
func (c Config) RuncRoot() string { return c.RuntimeRoot(RuntimeRunc) }

// RuntimeRoot is the per-instance state directory of the OCI runtime named runtime (the shim's
// Root option; the shim adds a directory per containerd namespace). Each runtime has its own, as
// their state formats differ.
func (c Config) RuntimeRoot(runtime string) string { return filepath.Join(c.StateDir, runtime) }

// OCIRuntimes are the OCI runtimes an instance may run containers with, so an uninstall looks
// in every one's RuntimeRoot (the node may have run with either).
func OCIRuntimes() []string { return []string{RuntimeRunc, RuntimeCrun} }

// OCIRuntimeRoot is the state directory of the configured OCI runtime.
func (c Config) OCIRuntimeRoot() string {
	if c.OCIRuntime == "" {
		return c.RuncRoot()
	}
	return c.RuntimeRoot(c.OCIRuntime)
}

// OptDir is the per-instance containerd opt plugin path.
func (c Config) OptDir() string { return filepath.Join(c.RootDir, "opt") }

// LogPath is where containerd's output goes.
func (c Config) LogPath() string { return filepath.Join(c.DataDir, "containerd", "containerd.log") }

// tomlString quotes s as a TOML basic string; JSON string escaping is a
// subset TOML accepts.
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const configTemplate = `# Generated by skiff; rewritten at every start.
version = 2
root = {{q .RootDir}}
state = {{q .StateDir}}
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = {{q .Address}}

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = {{q .OptDir}}

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = {{q .SandboxImage}}
    restrict_oom_score_adj = true
    stream_server_address = {{q .StreamServerAddress}}
    stream_server_port = {{q .StreamServerPort}}
    enable_selinux = false
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    max_concurrent_downloads = 3

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = {{q .CNIBinDir}}
      conf_dir = {{q .CNIConfDir}}
      max_conf_num = 1

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = {{q .Snapshotter}}
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          Root = {{q .OCIRuntimeRoot}}
          SystemdCgroup = false{{if .OCIRuntimeBinary}}
          BinaryName = {{q .OCIRuntimeBinary}}{{end}}

    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = {{q .RegistryConfigDir}}
`

// Render returns the containerd configuration file for c.
func (c Config) Render() (string, error) {
	tmpl, err := template.New("config").Funcs(template.FuncMap{"q": tomlString}).Parse(configTemplate)
	if err != nil {
		return "", fmt.Errorf("containerd config template: %w", err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, c); err != nil {
		return "", fmt.Errorf("render containerd config: %w", err)
	}
	return b.String(), nil
}

// WriteFiles creates containerd's directories and writes its configuration.
func (c Config) WriteFiles() error {
	for _, dir := range []string{filepath.Dir(c.ConfigPath()), c.RootDir, c.StateDir, c.CNIConfDir, c.RegistryConfigDir, filepath.Dir(c.Address)} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return fmt.Errorf("containerd dirs: %w", err)
		}
	}
	if err := c.linkCNIPlugins(); err != nil {
		return err
	}
	text, err := c.Render()
	if err != nil {
		return err
	}
	return writeFileAtomic(c.ConfigPath(), []byte(text), 0o600)
}

// linkCNIPlugins fills CNIBinDir for SkiffCNIBinary: skiff's plugin under its type's name, the
// stock plugins beside it. Links are replaced at every start (the binary may have moved).
func (c Config) linkCNIPlugins() error {
	if c.SkiffCNIBinary == "" || c.CNIBinDir == c.StockCNIBinDir {
		return nil
	}
	if err := os.MkdirAll(c.CNIBinDir, 0o755); err != nil {
		return fmt.Errorf("cni bin dir: %w", err)
	}
	links := map[string]string{cni.Type: c.SkiffCNIBinary}
	stock, err := os.ReadDir(c.StockCNIBinDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cni plugins: %w", err)
	}
	for _, e := range stock {
		if e.Name() != cni.Type {
			links[e.Name()] = filepath.Join(c.StockCNIBinDir, e.Name())
		}
	}
	for name, target := range links {
		path := filepath.Join(c.CNIBinDir, name)
		tmp := path + ".tmp"
		_ = os.Remove(tmp)
		if err := os.Symlink(target, tmp); err != nil {
			return fmt.Errorf("cni plugin link %s: %w", name, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("cni plugin link %s: %w", name, err)
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
