package containerd

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/skiff-sh/skiff/internal/cni"
)

// CNIConfigFile is the name of the network list skiff writes; containerd
// loads the first file of its conf dir in lexical order.
const CNIConfigFile = "10-skiff.conflist"

// CNINetwork describes the node's pod network: one bridge with host-local
// addresses from the node's pod CIDRs and hostPort through portmap. It does
// not masquerade: skiff's pod network (internal/podnet) does, only toward
// destinations outside the cluster's pod range.
type CNINetwork struct {
	// Name of the network list; default "skiff".
	Name string
	// Bridge is the Linux bridge the pods attach to; default "cni0".
	Bridge string
	// PodCIDRs are the node's pod ranges (one per IP family).
	PodCIDRs []string
	// Skiff, when set, makes the list name skiff's own plugin (internal/cni: veth, bridge,
	// addresses and masquerade in one exec) instead of bridge, host-local and portmap.
	Skiff *SkiffCNI
}

// SkiffCNI is what skiff's plugin needs beyond the network's name, bridge and CIDRs.
type SkiffCNI struct {
	// StateDir holds the address leases; it must survive restarts.
	StateDir string
	// PortmapPath is the portmap plugin, run only for pods with hostPorts.
	PortmapPath string
}

type cniRange struct {
	Subnet string `json:"subnet"`
}

type cniRoute struct {
	Dst string `json:"dst"`
}

type cniIPAM struct {
	Type   string       `json:"type"`
	Ranges [][]cniRange `json:"ranges"`
	Routes []cniRoute   `json:"routes"`
}

type cniPlugin struct {
	Type         string          `json:"type"`
	Bridge       string          `json:"bridge,omitempty"`
	IsGateway    bool            `json:"isGateway,omitempty"`
	IPMasq       bool            `json:"ipMasq,omitempty"`
	HairpinMode  bool            `json:"hairpinMode,omitempty"`
	IPAM         *cniIPAM        `json:"ipam,omitempty"`
	Capabilities map[string]bool `json:"capabilities,omitempty"`
}

type cniConfList struct {
	CNIVersion string      `json:"cniVersion"`
	Name       string      `json:"name"`
	Plugins    []cniPlugin `json:"plugins"`
}

// Render returns the CNI network list (conflist JSON) for n.
func (n CNINetwork) Render() ([]byte, error) {
	if len(n.PodCIDRs) == 0 {
		return nil, errors.New("cni network: no pod CIDR")
	}
	if n.Name == "" {
		n.Name = "skiff"
	}
	if n.Bridge == "" {
		n.Bridge = "cni0"
	}
	if n.Skiff != nil {
		return cni.RenderList(cni.ListConfig{Name: n.Name, Bridge: n.Bridge, Subnets: n.PodCIDRs, StateDir: n.Skiff.StateDir, PortmapPath: n.Skiff.PortmapPath})
	}
	ipam := &cniIPAM{Type: "host-local"}
	for _, cidr := range n.PodCIDRs {
		prefix, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, fmt.Errorf("cni network: pod CIDR %q: %w", cidr, err)
		}
		ipam.Ranges = append(ipam.Ranges, []cniRange{{Subnet: prefix.Masked().String()}})
		if prefix.Addr().Is4() {
			ipam.Routes = append(ipam.Routes, cniRoute{Dst: "0.0.0.0/0"})
		} else {
			ipam.Routes = append(ipam.Routes, cniRoute{Dst: "::/0"})
		}
	}
	list := cniConfList{
		CNIVersion: "1.0.0",
		Name:       n.Name,
		Plugins: []cniPlugin{
			// No ipMasq: skiff's pod network (internal/podnet) masquerades only traffic leaving
			// the cluster, so pod-to-pod traffic across nodes keeps the client's address.
			{Type: "bridge", Bridge: n.Bridge, IsGateway: true, HairpinMode: true, IPAM: ipam},
			{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(list, "", "  ")
}

// WriteCNIConfig writes n into confDir as CNIConfigFile. containerd picks the
// change up without a restart.
func WriteCNIConfig(confDir string, n CNINetwork) error {
	data, err := n.Render()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return fmt.Errorf("cni conf dir: %w", err)
	}
	return writeFileAtomic(filepath.Join(confDir, CNIConfigFile), data, 0o644)
}
