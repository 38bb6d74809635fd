package install

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
	"github.com/skiff-sh/skiff/internal/netpol"
	"github.com/skiff-sh/skiff/internal/nodelock"
	"github.com/skiff-sh/skiff/internal/pki"
	"github.com/skiff-sh/skiff/internal/podnet"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// Options place skiff on a host as a systemd service, as k3s's installer does.
type Options struct {
	// BinDir receives the skiff binary (default /usr/local/bin); UnitDir the unit (default
	// /etc/systemd/system).
	BinDir, UnitDir string
	// ServerArgs are the `skiff server` arguments the service runs with.
	ServerArgs []string
	// Start enables and starts the service when systemctl is there.
	Start bool
}

func (o *Options) defaults() {
	if o.BinDir == "" {
		o.BinDir = "/usr/local/bin"
	}
	if o.UnitDir == "" {
		o.UnitDir = "/etc/systemd/system"
	}
}

// unitName is the systemd unit skiff installs.
const unitName = "skiff.service"

// UnitFile is the systemd unit that runs `binary server args...`: restarted when it exits,
// KillMode=process so a restart of skiff leaves the pods running (the kubelet adopts them, as
// k3s's unit does), cgroup delegation for the containers, no task or file limits that a node
// with many pods would hit.
func UnitFile(binary string, args []string) string {
	quoted := make([]string, 0, len(args)+2)
	quoted = append(quoted, systemdQuote(binary), "server")
	for _, a := range args {
		quoted = append(quoted, systemdQuote(a))
	}
	return `[Unit]
Description=skiff: a Kubernetes-compatible cluster node
Documentation=https://github.com/skiff-sh/skiff
Wants=network-online.target
After=network-online.target

[Service]
Type=exec
ExecStart=` + strings.Join(quoted, " ") + `
KillMode=process
Delegate=yes
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
TimeoutStopSec=60
Restart=always
RestartSec=5s

[Install]
WantedBy=multi-user.target
`
}

// systemdQuote quotes an ExecStart argument when it needs it.
func systemdQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"'\\$%;") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `$$`, `%`, `%%`)
	return `"` + r.Replace(s) + `"`
}

// Install copies the running binary into BinDir and writes the unit; with Start and systemctl
// present it enables and starts the service. It reports what it did through progress.
func Install(ctx context.Context, o Options, progress func(format string, args ...any)) error {
	o.defaults()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary: %w", err)
	}
	binary := filepath.Join(o.BinDir, "skiff")
	if err := copyExecutable(self, binary); err != nil {
		return err
	}
	progress("installed %s", binary)
	unit := filepath.Join(o.UnitDir, unitName)
	if err := os.MkdirAll(o.UnitDir, 0o755); err != nil {
		return fmt.Errorf("unit dir: %w", err)
	}
	if err := pki.WriteFileAtomic(unit, []byte(UnitFile(binary, o.ServerArgs)), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", unit, err)
	}
	progress("wrote %s", unit)
	if !o.Start {
		return nil
	}
	if _, err := exec.LookPath("systemctl"); err != nil {
		progress("no systemctl on this host: start the node with %s server %s", binary, strings.Join(o.ServerArgs, " "))
		return nil
	}
	for _, args := range [][]string{{"daemon-reload"}, {"enable", "--now", unitName}} {
		if out, err := exec.CommandContext(ctx, "systemctl", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	progress("started %s", unitName)
	return nil
}

// copyExecutable copies src to dst (through a temporary file, so a running dst is replaced,
// not overwritten in place); a src that already is dst is left alone.
func copyExecutable(src, dst string) error {
	if same, _ := filepath.EvalSymlinks(src); same == dst {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".skiff-*")
	if err != nil {
		return fmt.Errorf("install binary: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("install binary: %w", err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// UninstallOptions say what to remove: the node's data dir (its etcd data, certificates,
// containers' state), and the service and binary Install placed.
type UninstallOptions struct {
	DataDir         string
	BinDir, UnitDir string
	Log             *slog.Logger
}

// UninstallPlan is what an uninstall finds to remove, computed before anything is touched.
type UninstallPlan struct {
	// Processes are left-over processes of the node (its containerd, container shims), by pid.
	Processes []int
	// RuntimeRoots hold the node's containers' OCI runtime state (runc's, and crun's for
	// --oci-runtime crun); every container in them is killed with the runtime that made it.
	RuntimeRoots []RuntimeRoot
	// Mounts are mount points under the data dir (pod volumes, container root file systems),
	// deepest first.
	Mounts []string
	// ProxyPrefix names the node's service-proxy chains and nftables table (proxy.NftTable);
	// ProxyDevice its service-range device.
	ProxyPrefix, ProxyDevice string
	// PodNetwork is the node's pod-network routes and masquerade chain.
	PodNetwork podnet.Host
	// HostNetwork is what the node's pods left of the pod network: namespaces, veths, leases,
	// the bridge (uninstall_net.go).
	HostNetwork HostNetworkPlan
	// Paths are removed last: the data dir, the unit, the binary.
	Paths []string
}

// PlanUninstall finds what the node at dataDir left on the host. mountinfo is the text of
// /proc/self/mountinfo; procs maps running pids to their command lines.
func PlanUninstall(o UninstallOptions, mountinfo string, procs map[int]string) UninstallPlan {
	dataDir := filepath.Clean(o.DataDir)
	ccfg := containerd.Config{DataDir: filepath.Join(dataDir, "kubelet")}.WithDefaults()
	plan := UninstallPlan{ProxyPrefix: proxy.NodePrefix(dataDir)}
	plan.ProxyDevice = proxy.DeviceName(plan.ProxyPrefix)
	plan.PodNetwork = podnet.NodeHost(plan.ProxyPrefix, dataDir)
	for pid, cmdline := range procs {
		if strings.Contains(cmdline, ccfg.ConfigPath()) || strings.Contains(cmdline, ccfg.Address) {
			plan.Processes = append(plan.Processes, pid)
		}
	}
	slices.Sort(plan.Processes)
	for _, rt := range containerd.OCIRuntimes() {
		plan.RuntimeRoots = append(plan.RuntimeRoots, RuntimeRoot{Runtime: rt, Root: ccfg.RuntimeRoot(rt)})
	}
	for _, line := range strings.Split(mountinfo, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dataDir || strings.HasPrefix(mp, dataDir+"/") {
			plan.Mounts = append(plan.Mounts, mp)
		}
	}
	// Deepest first, so a volume inside a pod's directory goes before the directory's own mount.
	slices.SortFunc(plan.Mounts, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	plan.Paths = []string{dataDir}
	if o.UnitDir != "" {
		plan.Paths = append(plan.Paths, filepath.Join(o.UnitDir, unitName))
	}
	if o.BinDir != "" {
		plan.Paths = append(plan.Paths, filepath.Join(o.BinDir, "skiff"))
	}
	return plan
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Uninstall removes what a node left on the host: its containers, its containerd, the mounts
// under its data dir, its pods' network namespaces, veths and addresses, its bridge when no other
// node's pod is on it, its service-proxy rules and device, the data dir, and the unit and binary
// Install placed. A node still running on the data dir is refused (stop it first). Every step is
// tried; the errors are returned together.
func Uninstall(ctx context.Context, o UninstallOptions, progress func(format string, args ...any)) error {
	if _, err := os.Stat(o.DataDir); err == nil {
		lock, err := nodelock.Acquire(o.DataDir)
		if err != nil {
			return err
		}
		lock.Release()
	}
	if o.UnitDir != "" {
		stopService(ctx, o.UnitDir, progress)
	}
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	plan := PlanUninstall(o, string(mountinfo), processes())
	plan.HostNetwork = PlanHostNetwork(readHostNetworkInputs(containerd.Config{DataDir: filepath.Join(filepath.Clean(o.DataDir), "kubelet")}.WithDefaults()))
	var errs []error
	for _, root := range plan.RuntimeRoots {
		n, err := killContainers(ctx, root)
		if err != nil {
			errs = append(errs, err)
		}
		if n > 0 {
			progress("killed %d containers", n)
		}
	}
	for _, pid := range plan.Processes {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(plan.Processes) > 0 {
		progress("stopped %d containerd processes", len(plan.Processes))
	}
	for _, m := range plan.Mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	if len(plan.Mounts) > 0 {
		progress("unmounted %d mounts", len(plan.Mounts))
	}
	if err := removeHostNetwork(ctx, plan.HostNetwork, progress); err != nil {
		errs = append(errs, fmt.Errorf("pods' network: %w", err))
	}
	host := proxy.Host{}
	if err := host.CleanupAll(ctx, plan.ProxyPrefix); err != nil {
		errs = append(errs, fmt.Errorf("service proxy rules: %w", err))
	}
	if err := host.DeleteDevice(ctx, plan.ProxyDevice); err != nil {
		errs = append(errs, fmt.Errorf("service range device: %w", err))
	}
	progress("removed the service proxy's rules")
	if err := netpol.Cleanup(ctx, host, plan.ProxyPrefix); err != nil {
		errs = append(errs, fmt.Errorf("network policy table: %w", err))
	}
	progress("removed the network policy table")
	if err := podnet.Cleanup(plan.PodNetwork); err != nil {
		errs = append(errs, fmt.Errorf("pod network routes and chain: %w", err))
	}
	progress("removed the pod network's routes and chain")
	for _, p := range plan.Paths {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			continue
		}
		progress("removed %s", p)
	}
	return errors.Join(errs...)
}

// stopService stops and disables the unit when systemctl is there (errors are not fatal: the
// unit may never have been started).
func stopService(ctx context.Context, unitDir string, progress func(string, ...any)) {
	if _, err := os.Stat(filepath.Join(unitDir, unitName)); err != nil {
		return
	}
	if _, err := exec.LookPath("systemctl"); err != nil {
		return
	}
	_ = exec.CommandContext(ctx, "systemctl", "disable", "--now", unitName).Run()
	_ = exec.CommandContext(ctx, "systemctl", "daemon-reload").Run()
	progress("stopped and disabled %s", unitName)
}

// RuntimeRoot is an OCI runtime's state directory; the runtime's command (runc, crun: the same
// command line) lists and kills its containers.
type RuntimeRoot struct {
	Runtime, Root string
}

// killContainers kills and deletes every container the runtime knows under its root (each
// namespace is a directory of its own), returning how many it found.
func killContainers(ctx context.Context, rr RuntimeRoot) (int, error) {
	root, runtime := rr.Root, rr.Runtime
	namespaces, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, ns := range namespaces {
		if !ns.IsDir() {
			continue
		}
		nsRoot := filepath.Join(root, ns.Name())
		out, err := exec.CommandContext(ctx, runtime, "--root", nsRoot, "list", "-q").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s list in %s: %w", runtime, nsRoot, err))
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			id := strings.TrimSpace(sc.Text())
			if id == "" {
				continue
			}
			n++
			_ = exec.CommandContext(ctx, runtime, "--root", nsRoot, "kill", id, "KILL").Run()
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if out, err := exec.CommandContext(dctx, runtime, "--root", nsRoot, "delete", "--force", id).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s delete %s: %w: %s", runtime, id, err, strings.TrimSpace(string(out))))
			}
			cancel()
		}
	}
	return n, errors.Join(errs...)
}

// processes maps every running pid to its command line (arguments joined by spaces).
func processes() map[int]string {
	out := map[int]string{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		out[pid] = strings.ReplaceAll(strings.TrimRight(string(data), "\x00"), "\x00", " ")
	}
	return out
}
