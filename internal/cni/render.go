package cni

import (
	"encoding/json"
	"fmt"
	"net/netip"
)

// ListConfig is the node's pod network as skiff's plugin serves it.
type ListConfig struct {
	// Name of the network list (and of the leases' directory).
	Name string
	// Bridge is the node's bridge.
	Bridge string
	// Subnets are the node's pod CIDRs.
	Subnets []string
	// StateDir holds the leases; it must survive restarts of skiff and containerd.
	StateDir string
	// PortmapPath is the portmap plugin run for pods with hostPorts.
	PortmapPath string
}

// RenderList returns the CNI network list (conflist JSON) naming skiff's plugin, checked by the
// same validation the plugin applies to its stdin.
func RenderList(c ListConfig) ([]byte, error) {
	subnets := make([]string, 0, len(c.Subnets))
	for _, s := range c.Subnets {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("cni network: pod CIDR %q: %w", s, err)
		}
		subnets = append(subnets, p.Masked().String())
	}
	// No ipMasq: skiff's pod network (internal/podnet) masquerades only traffic leaving the cluster
	// CIDR, so pod-to-pod traffic across nodes keeps the client pod's address; masquerading every
	// destination outside the node's own pod CIDR here would hide it.
	plugin := NetConf{
		CNIVersion: "1.0.0", Name: c.Name, Type: Type, Bridge: c.Bridge, Subnets: subnets, StateDir: c.StateDir,
		HairpinMode: true, PortmapPath: c.PortmapPath, Capabilities: map[string]bool{"portMappings": true},
	}
	raw, err := json.Marshal(plugin)
	if err != nil {
		return nil, err
	}
	if _, err := ParseConf(raw); err != nil {
		return nil, fmt.Errorf("cni network: %w", err)
	}
	// The list carries cniVersion and name; each plugin entry gets them from the list.
	var entry map[string]any
	if err := json.Unmarshal(raw, &entry); err != nil {
		return nil, err
	}
	delete(entry, "cniVersion")
	delete(entry, "name")
	delete(entry, "runtimeConfig")
	return json.MarshalIndent(map[string]any{"cniVersion": "1.0.0", "name": c.Name, "plugins": []any{entry}}, "", "  ")
}
