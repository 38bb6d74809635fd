package fakecsi

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Marker is the file a published mount target holds.
const Marker = "published-by-fakecsi"

// Call is one CSI call the driver received.
type Call struct {
	Method string
	// Request is the request message (a *csipb.NodePublishVolumeRequest and so on).
	Request any
}

// Driver is a fake CSI node plugin.
type Driver struct {
	Name       string
	NodeID     string
	MaxVolumes int64
	Topology   map[string]string
	// Capabilities are the Node service capabilities it reports.
	Capabilities []csipb.NodeServiceCapability_RPC_Type
	// Versions are the CSI versions it says it supports; default 1.0.0.
	Versions []string
	// Type is the plugin type it registers as; default CSIPlugin.
	Type string
	// Stats is what NodeGetVolumeStats answers.
	Stats []*csipb.VolumeUsage
	// BackingDir, when set, makes publishing real: a file system volume's target becomes a bind
	// mount of BackingDir/<volume ID> (read-only when asked), unmounted again by unpublishing.
	// It needs the privileges to mount.
	BackingDir string

	mu     sync.Mutex
	calls  []Call
	errs   map[string]error
	status []*registerapi.RegistrationStatus

	servers []*grpc.Server
	wg      sync.WaitGroup
}

// Fail makes method (e.g. "NodePublishVolume") answer err until Fail(method, nil).
func (d *Driver) Fail(method string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.errs == nil {
		d.errs = map[string]error{}
	}
	d.errs[method] = err
}

// Calls returns the calls so far, in order.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// Methods returns the names of the calls so far, in order, leaving out the ones listed.
func (d *Driver) Methods(except ...string) []string {
	var out []string
	for _, c := range d.Calls() {
		if !slices.Contains(except, c.Method) {
			out = append(out, c.Method)
		}
	}
	return out
}

// RegistrationStatus returns what the kubelet notified.
func (d *Driver) RegistrationStatus() []*registerapi.RegistrationStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.status)
}

func (d *Driver) record(method string, req any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, Call{Method: method, Request: req})
	return d.errs[method]
}

// Start serves the CSI services on endpoint and the registration service on registration (a
// socket in the kubelet's plugins_registry). Stop ends both.
func (d *Driver) Start(endpoint, registrationSocket string) error {
	csiServer := grpc.NewServer()
	csipb.RegisterIdentityServer(csiServer, identity{d: d})
	csipb.RegisterNodeServer(csiServer, node{d: d})
	regServer := grpc.NewServer()
	registerapi.RegisterRegistrationServer(regServer, registration{d: d, endpoint: endpoint})
	for _, s := range []struct {
		path   string
		server *grpc.Server
	}{{endpoint, csiServer}, {registrationSocket, regServer}} {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
			return err
		}
		_ = os.Remove(s.path)
		l, err := net.Listen("unix", s.path)
		if err != nil {
			d.Stop()
			return fmt.Errorf("fakecsi: listen on %s: %w", s.path, err)
		}
		d.servers = append(d.servers, s.server)
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			_ = s.server.Serve(l)
		}()
	}
	return nil
}

// Stop stops serving and waits for the servers to end; the sockets are removed.
func (d *Driver) Stop() {
	for _, s := range d.servers {
		s.Stop()
	}
	d.servers = nil
	d.wg.Wait()
}

type registration struct {
	registerapi.UnimplementedRegistrationServer
	d        *Driver
	endpoint string
}

func (r registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	typ, versions := r.d.Type, r.d.Versions
	if typ == "" {
		typ = registerapi.CSIPlugin
	}
	if len(versions) == 0 {
		versions = []string{"1.0.0"}
	}
	return &registerapi.PluginInfo{Type: typ, Name: r.d.Name, Endpoint: r.endpoint, SupportedVersions: versions}, nil
}

func (r registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	r.d.status = append(r.d.status, s)
	return &registerapi.RegistrationStatusResponse{}, nil
}

type identity struct {
	csipb.UnimplementedIdentityServer
	d *Driver
}

func (i identity) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: i.d.Name, VendorVersion: "test"}, nil
}

func (i identity) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}

type node struct {
	csipb.UnimplementedNodeServer
	d *Driver
}

func (n node) NodeGetInfo(_ context.Context, req *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	if err := n.d.record("NodeGetInfo", req); err != nil {
		return nil, err
	}
	resp := &csipb.NodeGetInfoResponse{NodeId: n.d.NodeID, MaxVolumesPerNode: n.d.MaxVolumes}
	if len(n.d.Topology) > 0 {
		resp.AccessibleTopology = &csipb.Topology{Segments: n.d.Topology}
	}
	return resp, nil
}

func (n node) NodeGetCapabilities(_ context.Context, req *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	if err := n.d.record("NodeGetCapabilities", req); err != nil {
		return nil, err
	}
	resp := &csipb.NodeGetCapabilitiesResponse{}
	for _, c := range n.d.Capabilities {
		resp.Capabilities = append(resp.Capabilities, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: c}}})
	}
	return resp, nil
}

func (n node) NodeStageVolume(_ context.Context, req *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	if err := n.d.record("NodeStageVolume", req); err != nil {
		return nil, err
	}
	if req.GetVolumeId() == "" || req.GetStagingTargetPath() == "" || req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume ID, staging path and capability are required")
	}
	return &csipb.NodeStageVolumeResponse{}, os.MkdirAll(req.GetStagingTargetPath(), 0o750)
}

func (n node) NodeUnstageVolume(_ context.Context, req *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	if err := n.d.record("NodeUnstageVolume", req); err != nil {
		return nil, err
	}
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

func (n node) NodePublishVolume(_ context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	if err := n.d.record("NodePublishVolume", req); err != nil {
		return nil, err
	}
	target := req.GetTargetPath()
	if req.GetVolumeId() == "" || target == "" || req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume ID, target path and capability are required")
	}
	// The CO creates the target's parent; the plugin the target itself (CSI spec).
	if _, err := os.Stat(filepath.Dir(target)); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "target's parent: %v", err)
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		return &csipb.NodePublishVolumeResponse{}, os.WriteFile(target, nil, 0o640)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, err
	}
	if n.d.BackingDir != "" {
		return &csipb.NodePublishVolumeResponse{}, bindMount(filepath.Join(n.d.BackingDir, req.GetVolumeId()), target, req.GetReadonly())
	}
	return &csipb.NodePublishVolumeResponse{}, os.WriteFile(filepath.Join(target, Marker), []byte(req.GetVolumeId()), 0o644)
}

func (n node) NodeUnpublishVolume(_ context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	if err := n.d.record("NodeUnpublishVolume", req); err != nil {
		return nil, err
	}
	if n.d.BackingDir != "" {
		if err := syscall.Unmount(req.GetTargetPath(), 0); err != nil && err != syscall.EINVAL && !os.IsNotExist(err) {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", req.GetTargetPath(), err)
		}
	}
	// The plugin removes the target (CSI spec).
	_ = os.Remove(filepath.Join(req.GetTargetPath(), Marker))
	if err := os.Remove(req.GetTargetPath()); err != nil && !os.IsNotExist(err) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

func (n node) NodeExpandVolume(_ context.Context, req *csipb.NodeExpandVolumeRequest) (*csipb.NodeExpandVolumeResponse, error) {
	if err := n.d.record("NodeExpandVolume", req); err != nil {
		return nil, err
	}
	return &csipb.NodeExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}, nil
}

func (n node) NodeGetVolumeStats(_ context.Context, req *csipb.NodeGetVolumeStatsRequest) (*csipb.NodeGetVolumeStatsResponse, error) {
	if err := n.d.record("NodeGetVolumeStats", req); err != nil {
		return nil, err
	}
	return &csipb.NodeGetVolumeStatsResponse{Usage: n.d.Stats}, nil
}

// bindMount makes target a bind mount of source (created world-writable, as a fresh volume), read-only
// when asked; a target that is a mount point already is left as it is (publishing is idempotent).
func bindMount(source, target string, readOnly bool) error {
	if err := os.MkdirAll(source, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(source, 0o777); err != nil {
		return err
	}
	if isMountPoint(target) {
		return nil
	}
	if err := syscall.Mount(source, target, "", syscall.MS_BIND, ""); err != nil {
		return status.Errorf(codes.Internal, "bind mount %s: %v", target, err)
	}
	if readOnly {
		if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return status.Errorf(codes.Internal, "read-only remount %s: %v", target, err)
		}
	}
	return nil
}

func isMountPoint(path string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}
