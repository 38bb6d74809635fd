package csi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/clock"
)

// socketID tells a socket file from one created again at the same path (a registrar that
// restarted): a new file has a new inode or modification time.
type socketID struct {
	path  string
	inode uint64
	mtime int64
}

// socketPlan is what one listing of the registration directory asks for.
type socketPlan struct {
	// register are sockets not registered yet (or created again), in path order.
	register []socketID
	// deregister are registered sockets that are gone or were replaced.
	deregister []socketID
}

// planSockets compares the registered sockets with a listing of the directory.
func planSockets(registered map[socketID]string, present []socketID) socketPlan {
	var plan socketPlan
	seen := map[socketID]bool{}
	for _, s := range present {
		seen[s] = true
		if _, ok := registered[s]; !ok {
			plan.register = append(plan.register, s)
		}
	}
	for s := range registered {
		if !seen[s] {
			plan.deregister = append(plan.deregister, s)
		}
	}
	byPath := func(a, b socketID) int { return strings.Compare(a.path, b.path) }
	slices.SortFunc(plan.register, byPath)
	slices.SortFunc(plan.deregister, byPath)
	return plan
}

// supportsCSIv1 reports whether a plugin's supported versions include a CSI 1.x, the only major
// version the kubelet speaks ("1.0.0", "v1.11.0" or "1").
func supportsCSIv1(versions []string) bool {
	for _, v := range versions {
		major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
		if n, err := strconv.Atoi(major); err == nil && n == 1 {
			return true
		}
	}
	return false
}

// errNotHandled marks a plugin of a type the kubelet does not handle (told so once).
var errNotHandled = errors.New("plugin type not handled")

// Watcher registers the plugins whose registration sockets appear in Dir and drops those whose
// sockets go.
type Watcher struct {
	// Dir is <kubelet root>/plugins_registry.
	Dir      string
	Registry *Registry
	NodeInfo *NodeInfo
	Clock    clock.WithTicker
	Log      *slog.Logger
	// Period is how often Dir is listed; default one second.
	Period time.Duration
	// Timeout bounds the calls of one registration; default 10 seconds.
	Timeout time.Duration

	// registered maps each registered socket to its driver's name.
	registered map[socketID]string
}

// Prime registers the sockets already in Dir, then drops CSINode entries of drivers that are gone
// (a driver removed while the kubelet was down has no socket left to say so). The kubelet primes
// before it looks at volumes left on disk, which need their drivers to be taken down.
func (w *Watcher) Prime(ctx context.Context) {
	if err := os.MkdirAll(w.Dir, 0o750); err != nil {
		w.Log.Error("plugin registration directory", "dir", w.Dir, "err", err)
	}
	if _, err := w.NodeInfo.EnsureCSINode(ctx); err != nil && ctx.Err() == nil {
		w.Log.Warn("csinode", "err", err)
	}
	w.Sync(ctx)
	names := map[string]bool{}
	for _, name := range w.Registry.Names() {
		names[name] = true
	}
	if err := w.NodeInfo.Sync(ctx, names); err != nil && ctx.Err() == nil {
		w.Log.Warn("csinode: dropping drivers that are gone", "err", err)
	}
}

// Run lists Dir every Period until ctx ends (after Prime).
func (w *Watcher) Run(ctx context.Context) {
	if w.Period == 0 {
		w.Period = time.Second
	}
	ticker := w.Clock.NewTicker(w.Period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			w.Registry.Close()
			return
		case <-ticker.C():
			w.Sync(ctx)
		}
	}
}

// Sync lists Dir once and carries out the plan.
func (w *Watcher) Sync(ctx context.Context) {
	present, err := listSockets(w.Dir)
	if err != nil {
		w.Log.Warn("list plugin registration sockets", "dir", w.Dir, "err", err)
		return
	}
	if w.registered == nil {
		w.registered = map[socketID]string{}
	}
	if w.Timeout == 0 {
		w.Timeout = 10 * time.Second
	}
	plan := planSockets(w.registered, present)
	for _, s := range plan.deregister {
		name := w.registered[s]
		delete(w.registered, s)
		if name == "" || w.stillRegistered(name) {
			continue
		}
		w.Registry.remove(name)
		if err := w.NodeInfo.Uninstall(ctx, name); err != nil {
			w.Log.Warn("csi driver deregistration", "driver", name, "err", err)
		}
		w.Log.Info("csi driver deregistered", "driver", name, "socket", s.path)
	}
	for _, s := range plan.register {
		name, err := w.register(ctx, s.path)
		if errors.Is(err, errNotHandled) {
			w.registered[s] = ""
			continue
		}
		if err != nil {
			// Not recorded: the next listing tries again.
			w.Log.Warn("plugin registration failed", "socket", s.path, "err", err)
			continue
		}
		w.registered[s] = name
	}
}

// stillRegistered reports whether another socket still registers name.
func (w *Watcher) stillRegistered(name string) bool {
	for _, n := range w.registered {
		if n == name {
			return true
		}
	}
	return false
}

// register runs the registration handshake with one socket: GetInfo, the driver's own NodeGetInfo,
// the API bookkeeping, then NotifyRegistrationStatus with the outcome. It returns the driver's
// name; a plugin of another type is told it is not registered and errNotHandled returned.
func (w *Watcher) register(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	conn, err := dialUnix(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	client := registerapi.NewRegistrationClient(conn)
	info, err := client.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		return "", fmt.Errorf("GetInfo: %w", err)
	}
	notify := func(regErr error) error {
		status := &registerapi.RegistrationStatus{PluginRegistered: regErr == nil}
		if regErr != nil {
			status.Error = regErr.Error()
		}
		if _, err := client.NotifyRegistrationStatus(ctx, status); err != nil {
			return errors.Join(regErr, fmt.Errorf("NotifyRegistrationStatus: %w", err))
		}
		return regErr
	}
	if info.GetType() != registerapi.CSIPlugin {
		w.Log.Info("plugin of a type this kubelet does not handle", "socket", path, "type", info.GetType(), "name", info.GetName())
		// Told once: the socket is recorded, so it is not asked again until it is created anew.
		return "", errors.Join(notify(fmt.Errorf("plugin type %q is not supported by this kubelet", info.GetType())), errNotHandled)
	}
	d, err := w.validateAndConnect(ctx, info, path)
	if err != nil {
		return "", notify(err)
	}
	if err := w.NodeInfo.Install(ctx, d); err != nil {
		_ = d.Close()
		return "", notify(err)
	}
	w.Registry.put(d)
	if err := notify(nil); err != nil {
		return "", err
	}
	w.Log.Info("csi driver registered", "driver", d.Name, "endpoint", d.Endpoint, "nodeID", d.NodeID)
	return d.Name, nil
}

func (w *Watcher) validateAndConnect(ctx context.Context, info *registerapi.PluginInfo, path string) (*Driver, error) {
	if info.GetName() == "" {
		return nil, errors.New("plugin name is empty")
	}
	if !supportsCSIv1(info.GetSupportedVersions()) {
		return nil, fmt.Errorf("csi driver %s: none of the versions %v is supported (1.x is)", info.GetName(), info.GetSupportedVersions())
	}
	endpoint := info.GetEndpoint()
	if endpoint == "" {
		// The registration socket serves the CSI services too.
		endpoint = path
	}
	return Connect(ctx, info.GetName(), endpoint)
}

// listSockets lists the unix sockets under dir (subdirectories included), skipping names that
// start with a dot as Kubernetes' plugin watcher does.
func listSockets(dir string) ([]socketID, error) {
	var out []socketID
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			return err
		}
		if strings.HasPrefix(e.Name(), ".") && path != dir {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if e.Type()&fs.ModeSocket == 0 {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		id := socketID{path: path, mtime: info.ModTime().UnixNano()}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			id.inode = st.Ino
		}
		out = append(out, id)
		return nil
	})
	return out, err
}
