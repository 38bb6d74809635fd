package install

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/skiff-sh/skiff/internal/cni"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
)

// What skiff uninstall removes of a node's pod network on the host (besides the service proxy's
// and the pod network agent's rules, which their packages clean): the pods' network namespaces,
// their veths and address leases, and the node's bridge with its masquerade chain.
//
// Everything is found by name from what this node's own files say: the CNI network list in its
// containerd's conf dir names the bridge, network, subnets and lease dir; the OCI bundles in its
// containerd's state dir name each sandbox and the network namespace containerd made for it. A
// bridge is shared by every node on the host that uses the same --cni-bridge (cni0 by default),
// so it goes only when no port of another node's pod is left on it; the network's masquerade
// chain and lease dir, named after the network, go with it.

// HostNetworkPlan is what a node's pod network left on the host, decided before anything is
// touched.
type HostNetworkPlan struct {
	// NetNS are the pod network namespaces (bind-mount files under /run/netns) of the node's
	// sandboxes.
	NetNS []string
	// SandboxIDs are the node's pod sandboxes; the address leases they hold are released.
	SandboxIDs []string
	// Veths are the host ends of the pods' veth pairs that skiff's plugin names after the
	// sandbox (empty with the stock bridge plugin, whose names are random).
	Veths []string
	// Bridge, Network and Subnets come from the node's CNI network list; empty when the node
	// never wrote one (no pod CIDR yet).
	Bridge, Network string
	Subnets         []string
	// LeaseDir holds the network's address leases (skiff's plugin or host-local).
	LeaseDir string
}

// ociBundle is the part of a container's OCI config (config.json) the plan reads.
type ociBundle struct {
	Annotations map[string]string `json:"annotations"`
	Linux       struct {
		Namespaces []struct {
			Type string `json:"type"`
			Path string `json:"path"`
		} `json:"namespaces"`
	} `json:"linux"`
}

// hostLocalDir is where the stock host-local IPAM keeps its leases, one dir per network.
const hostLocalDir = "/var/lib/cni/networks"

// PlanHostNetwork decides what to remove of the node's pod network from its CNI network list
// (confList, nil when absent) and its containers' OCI configs (bundles). Bundles that do not parse
// and namespace paths outside /run/netns are skipped: the plan never names anything it did not
// find in the node's own files.
func PlanHostNetwork(confList []byte, bundles [][]byte) HostNetworkPlan {
	var p HostNetworkPlan
	skiffPlugin := false
	if len(confList) > 0 {
		var list struct {
			Name    string `json:"name"`
			Plugins []struct {
				Type     string   `json:"type"`
				Bridge   string   `json:"bridge"`
				Subnets  []string `json:"subnets"`
				StateDir string   `json:"stateDir"`
				IPAM     struct {
					Type   string `json:"type"`
					Ranges [][]struct {
						Subnet string `json:"subnet"`
					} `json:"ranges"`
				} `json:"ipam"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal(confList, &list); err == nil && validName(list.Name) {
			for _, pl := range list.Plugins {
				switch {
				case pl.Type == cni.Type && validLinkName(pl.Bridge):
					skiffPlugin = true
					p.Bridge, p.Network, p.Subnets = pl.Bridge, list.Name, validSubnets(pl.Subnets)
					if filepath.IsAbs(pl.StateDir) {
						p.LeaseDir = filepath.Join(filepath.Clean(pl.StateDir), list.Name)
					}
				case pl.Type == "bridge" && validLinkName(pl.Bridge):
					p.Bridge, p.Network = pl.Bridge, list.Name
					var subnets []string
					for _, set := range pl.IPAM.Ranges {
						for _, r := range set {
							subnets = append(subnets, r.Subnet)
						}
					}
					p.Subnets = validSubnets(subnets)
					if pl.IPAM.Type == "host-local" {
						p.LeaseDir = filepath.Join(hostLocalDir, list.Name)
					}
				}
			}
		}
	}
	for _, raw := range bundles {
		var b ociBundle
		if json.Unmarshal(raw, &b) != nil || b.Annotations["io.kubernetes.cri.container-type"] != "sandbox" {
			continue
		}
		id := b.Annotations["io.kubernetes.cri.sandbox-id"]
		if id == "" || strings.ContainsAny(id, "/\n\x00") {
			continue
		}
		p.SandboxIDs = append(p.SandboxIDs, id)
		if skiffPlugin {
			p.Veths = append(p.Veths, cni.HostVethName(id, "eth0"))
		}
		for _, ns := range b.Linux.Namespaces {
			if ns.Type == "network" && isPodNetNS(ns.Path) {
				p.NetNS = append(p.NetNS, filepath.Clean(ns.Path))
			}
		}
	}
	for _, s := range []*[]string{&p.NetNS, &p.SandboxIDs, &p.Veths} {
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	return p
}

// isPodNetNS: path is a namespace file directly in /run/netns (or /var/run/netns), where
// containerd's CRI plugin creates pod network namespaces.
func isPodNetNS(path string) bool {
	clean := filepath.Clean(path)
	dir := filepath.Dir(clean)
	return (dir == "/run/netns" || dir == "/var/run/netns") && validName(filepath.Base(clean))
}

func validName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\n\x00")
}

// validLinkName is a Linux interface name (at most 15 bytes, no slash or space).
func validLinkName(s string) bool {
	return validName(s) && len(s) <= 15 && !strings.ContainsAny(s, " :")
}

func validSubnets(in []string) []string {
	var out []string
	for _, s := range in {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked().String())
		}
	}
	return out
}

// LeasesToRelease names the lease files in the network's lease dir that the node's sandboxes hold.
// leases maps a file name to its content: skiff's plugin writes "<sandbox>/<ifname>", host-local
// "<sandbox>\r\n<ifname>". Bookkeeping files (last-*, lock) are nobody's lease.
func (p HostNetworkPlan) LeasesToRelease(leases map[string]string) []string {
	var out []string
	for name, content := range leases {
		if _, err := netip.ParseAddr(name); err != nil {
			continue
		}
		holder, _, _ := strings.Cut(strings.TrimSpace(content), "/")
		holder, _, _ = strings.Cut(holder, "\n")
		holder = strings.TrimSpace(holder)
		if slices.Contains(p.SandboxIDs, holder) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// BridgeVerdict says whether the bridge may go: only when every port still on it is one of the
// node's own veths. foreign are the ports of other nodes' pods that keep it.
func (p HostNetworkPlan) BridgeVerdict(ports []string) (remove bool, foreign []string) {
	for _, port := range ports {
		if !slices.Contains(p.Veths, port) {
			foreign = append(foreign, port)
		}
	}
	slices.Sort(foreign)
	return len(foreign) == 0, foreign
}

// readHostNetworkInputs reads the node's CNI network list and its containers' OCI configs.
func readHostNetworkInputs(ccfg containerd.Config) (confList []byte, bundles [][]byte) {
	confList, _ = os.ReadFile(filepath.Join(ccfg.CNIConfDir, containerd.CNIConfigFile))
	paths, _ := filepath.Glob(filepath.Join(ccfg.StateDir, "io.containerd.runtime.v2.task", "*", "*", "config.json"))
	for _, path := range paths {
		if raw, err := os.ReadFile(path); err == nil {
			bundles = append(bundles, raw)
		}
	}
	return confList, bundles
}

// bridgeSettle is how long a removal waits for the kernel to take the veths of deleted network
// namespaces off the bridge (namespaces are torn down asynchronously).
const bridgeSettle = 5 * time.Second

// removeHostNetwork carries out p; the node's containers are dead by now. Every step is tried;
// the errors are returned together.
func removeHostNetwork(ctx context.Context, p HostNetworkPlan, progress func(format string, args ...any)) error {
	var errs []error
	for _, ns := range p.NetNS {
		if err := syscall.Unmount(ns, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount network namespace %s: %w", ns, err))
			continue
		}
		if err := os.Remove(ns); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove network namespace %s: %w", ns, err))
		}
	}
	if len(p.NetNS) > 0 {
		progress("removed %d pod network namespaces", len(p.NetNS))
	}
	for _, name := range p.Veths {
		if link, err := netlink.LinkByName(name); err == nil {
			if err := netlink.LinkDel(link); err != nil && !isLinkGone(err) {
				errs = append(errs, fmt.Errorf("delete veth %s: %w", name, err))
			}
		}
	}
	if p.LeaseDir != "" {
		released, err := releaseLeases(p)
		if err != nil {
			errs = append(errs, err)
		}
		if released > 0 {
			progress("released %d pod addresses in %s", released, p.LeaseDir)
		}
	}
	if p.Bridge == "" {
		return errors.Join(errs...)
	}
	removed, foreign, err := removeBridge(ctx, p)
	switch {
	case err != nil:
		errs = append(errs, err)
	case removed:
		progress("removed bridge %s", p.Bridge)
		if err := cni.RemoveMasquerade(ctx, p.Network, p.Subnets); err != nil {
			errs = append(errs, fmt.Errorf("masquerade chain of %s: %w", p.Network, err))
		}
		if p.LeaseDir != "" {
			if err := os.RemoveAll(p.LeaseDir); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", p.LeaseDir, err))
			}
		}
	case len(foreign) > 0:
		progress("left bridge %s in place: other nodes' pods are on it (%s)", p.Bridge, strings.Join(foreign, ", "))
	}
	return errors.Join(errs...)
}

// releaseLeases removes the lease files p's sandboxes hold.
func releaseLeases(p HostNetworkPlan) (int, error) {
	entries, err := os.ReadDir(p.LeaseDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("leases: %w", err)
	}
	leases := map[string]string{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if raw, err := os.ReadFile(filepath.Join(p.LeaseDir, e.Name())); err == nil {
				leases[e.Name()] = string(raw)
			}
		}
	}
	var errs []error
	n := 0
	for _, name := range p.LeasesToRelease(leases) {
		if err := os.Remove(filepath.Join(p.LeaseDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("release lease %s: %w", name, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// removeBridge deletes p's bridge once only the node's own ports (or none) are on it, waiting up
// to bridgeSettle for the kernel to take the veths of deleted namespaces away. A bridge that is
// absent counts as removed; one that is not a bridge is left alone.
func removeBridge(ctx context.Context, p HostNetworkPlan) (removed bool, foreign []string, err error) {
	deadline := time.Now().Add(bridgeSettle)
	for {
		br, err := netlink.LinkByName(p.Bridge)
		if isLinkGone(err) {
			return true, nil, nil
		}
		if err != nil {
			return false, nil, fmt.Errorf("bridge %s: %w", p.Bridge, err)
		}
		if _, ok := br.(*netlink.Bridge); !ok {
			return false, nil, fmt.Errorf("%s is a %s, not a bridge: left alone", p.Bridge, br.Type())
		}
		links, err := netlink.LinkList()
		if err != nil {
			return false, nil, fmt.Errorf("list links: %w", err)
		}
		var ports []string
		for _, l := range links {
			if l.Attrs().MasterIndex == br.Attrs().Index {
				ports = append(ports, l.Attrs().Name)
			}
		}
		ok, foreign := p.BridgeVerdict(ports)
		if ok {
			if err := netlink.LinkDel(br); err != nil && !isLinkGone(err) {
				return false, nil, fmt.Errorf("delete bridge %s: %w", p.Bridge, err)
			}
			return true, nil, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, foreign, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func isLinkGone(err error) bool {
	var nf netlink.LinkNotFoundError
	return err != nil && (errors.As(err, &nf) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENOENT))
}
