package csi

import (
	"context"
	"fmt"
	"net"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Driver is a registered CSI node plugin.
type Driver struct {
	// Name is the driver's name (CSIDriver's name, PV spec.csi.driver).
	Name string
	// Endpoint is the unix socket of the driver's CSI services.
	Endpoint string
	// NodeID, MaxVolumes and Topology are what NodeGetInfo answered.
	NodeID     string
	MaxVolumes int64
	Topology   map[string]string
	// Node calls the driver's Node service.
	Node csipb.NodeClient

	conn *grpc.ClientConn
	caps map[csipb.NodeServiceCapability_RPC_Type]bool
}

// Has reports whether the driver's NodeGetCapabilities listed c.
func (d *Driver) Has(c csipb.NodeServiceCapability_RPC_Type) bool { return d.caps[c] }

// Close closes the driver's connection.
func (d *Driver) Close() error {
	if d.conn == nil {
		return nil
	}
	return d.conn.Close()
}

// dialUnix connects to a unix socket; the connection is made lazily by gRPC, so a driver that
// is not listening yet fails the first call, not the dial.
func dialUnix(path string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	return conn, nil
}

// Connect dials a driver's endpoint and asks its Node service who it is on this node
// (NodeGetInfo) and what it can do (NodeGetCapabilities).
func Connect(ctx context.Context, name, endpoint string) (*Driver, error) {
	conn, err := dialUnix(endpoint)
	if err != nil {
		return nil, err
	}
	d := &Driver{Name: name, Endpoint: endpoint, Node: csipb.NewNodeClient(conn), conn: conn, caps: map[csipb.NodeServiceCapability_RPC_Type]bool{}}
	info, err := d.Node.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("NodeGetInfo of %s: %w", name, err)
	}
	if info.GetNodeId() == "" {
		_ = conn.Close()
		return nil, fmt.Errorf("NodeGetInfo of %s: empty node ID", name)
	}
	d.NodeID, d.MaxVolumes = info.GetNodeId(), info.GetMaxVolumesPerNode()
	if t := info.GetAccessibleTopology(); t != nil {
		d.Topology = t.GetSegments()
	}
	caps, err := d.Node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("NodeGetCapabilities of %s: %w", name, err)
	}
	for _, c := range caps.GetCapabilities() {
		if rpc := c.GetRpc(); rpc != nil {
			d.caps[rpc.GetType()] = true
		}
	}
	return d, nil
}

// Registry holds the registered drivers by name.
type Registry struct {
	mu      sync.Mutex
	drivers map[string]*Driver
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{drivers: map[string]*Driver{}} }

// Get returns the driver registered under name.
func (r *Registry) Get(name string) (*Driver, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.drivers[name]
	return d, ok
}

// Names lists the registered drivers.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.drivers))
	for name := range r.drivers {
		out = append(out, name)
	}
	return out
}

// put registers d, closing the connection of a driver it replaces.
func (r *Registry) put(d *Driver) {
	r.mu.Lock()
	old := r.drivers[d.Name]
	r.drivers[d.Name] = d
	r.mu.Unlock()
	if old != nil && old != d {
		_ = old.Close()
	}
}

// remove drops the driver registered under name.
func (r *Registry) remove(name string) {
	r.mu.Lock()
	old := r.drivers[name]
	delete(r.drivers, name)
	r.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
}

// Close closes every driver's connection.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, d := range r.drivers {
		_ = d.Close()
		delete(r.drivers, name)
	}
}
