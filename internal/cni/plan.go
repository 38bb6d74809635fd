package cni

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Type is the plugin type skiff's network list names; containerd runs the binary of that name in
// its CNI bin dir (a link to the skiff binary).
const Type = "skiff-bridge"

// SupportedVersions are the CNI spec versions the plugin speaks.
var supportedVersions = []string{"0.3.0", "0.3.1", "0.4.0", "1.0.0"} //nolint:gochecknoglobals // constant list.

// CNI error codes (spec section "Error").
const (
	codeIncompatibleVersion = 1
	codeInvalidEnvironment  = 4
	codeDecode              = 6
	codeInvalidConfig       = 7
	codeTryAgainLater       = 11
	codeInternal            = 999
)

// Error is a CNI error result: printed as JSON on stdout, exit status 1.
type Error struct {
	CNIVersion string `json:"cniVersion,omitempty"`
	Code       int    `json:"code"`
	Msg        string `json:"msg"`
	Details    string `json:"details,omitempty"`
}

func (e *Error) Error() string {
	if e.Details != "" {
		return e.Msg + ": " + e.Details
	}
	return e.Msg
}

func errorf(code int, msg, format string, args ...any) *Error {
	return &Error{Code: code, Msg: msg, Details: fmt.Sprintf(format, args...)}
}

// PortMapping is one hostPort of the runtime config (capability portMappings).
type PortMapping struct {
	HostPort      int    `json:"hostPort"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
	HostIP        string `json:"hostIP,omitempty"`
}

// NetConf is the plugin's configuration, as skiff writes it into the network list (see Render).
type NetConf struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Type       string `json:"type"`
	// Bridge is the node's bridge; created on first use.
	Bridge string `json:"bridge"`
	// Subnets are the node's pod CIDRs, one per IP family; the first address of each is the
	// bridge's (the pods' gateway).
	Subnets []string `json:"subnets"`
	// StateDir holds the address leases, one directory per network name.
	StateDir string `json:"stateDir"`
	// MTU of the veth pairs and the bridge; 0 leaves the kernel's default.
	MTU int `json:"mtu,omitempty"`
	// HairpinMode lets a pod reach itself through a Service.
	HairpinMode bool `json:"hairpinMode,omitempty"`
	// IPMasq installs, once per bridge, a masquerade rule for traffic from the pod CIDRs to
	// anything outside them.
	IPMasq bool `json:"ipMasq,omitempty"`
	// PortmapPath is the portmap plugin run for pods with hostPorts (empty: hostPorts fail).
	PortmapPath string `json:"portmapPath,omitempty"`
	// Capabilities are what the runtime may pass in RuntimeConfig.
	Capabilities map[string]bool `json:"capabilities,omitempty"`
	// RuntimeConfig is filled in by the runtime from the capabilities.
	RuntimeConfig struct {
		PortMappings []PortMapping `json:"portMappings,omitempty"`
	} `json:"runtimeConfig,omitempty"`
	// PrevResult is passed on DEL and CHECK (and by a chained plugin).
	PrevResult json.RawMessage `json:"prevResult,omitempty"`
}

// Network is a NetConf validated: what ADD, DEL and CHECK work from.
type Network struct {
	Conf   NetConf
	Ranges []Range
}

// Range is one pod CIDR and its gateway (the bridge's address).
type Range struct {
	Subnet  netip.Prefix
	Gateway netip.Addr
}

// ParseConf decodes and validates the plugin's stdin.
func ParseConf(data []byte) (Network, error) {
	var conf NetConf
	if err := json.Unmarshal(data, &conf); err != nil {
		return Network{}, errorf(codeDecode, "decode network config", "%v", err)
	}
	if !slices.Contains(supportedVersions, conf.CNIVersion) {
		return Network{}, &Error{Code: codeIncompatibleVersion, Msg: "incompatible CNI version", Details: fmt.Sprintf("config has %q, plugin supports %s", conf.CNIVersion, strings.Join(supportedVersions, ", "))}
	}
	if conf.Type != Type {
		return Network{}, errorf(codeInvalidConfig, "invalid network config", "type %q is not %q", conf.Type, Type)
	}
	var problems []string
	if conf.Name == "" || strings.ContainsAny(conf.Name, "/\x00") || conf.Name == "." || conf.Name == ".." {
		problems = append(problems, fmt.Sprintf("name %q is not a valid network name", conf.Name))
	}
	if conf.Bridge == "" || len(conf.Bridge) > 15 || strings.ContainsAny(conf.Bridge, "/ \x00") {
		problems = append(problems, fmt.Sprintf("bridge %q is not a valid interface name", conf.Bridge))
	}
	if conf.StateDir == "" || !strings.HasPrefix(conf.StateDir, "/") {
		problems = append(problems, fmt.Sprintf("stateDir %q is not an absolute path", conf.StateDir))
	}
	if conf.MTU < 0 || conf.MTU > 65535 {
		problems = append(problems, fmt.Sprintf("mtu %d is out of range", conf.MTU))
	}
	var ranges []Range
	families := map[bool]bool{}
	for _, s := range conf.Subnets {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			problems = append(problems, fmt.Sprintf("subnet %q: %v", s, err))
			continue
		}
		p = p.Masked()
		if hostBits(p) < 2 {
			problems = append(problems, fmt.Sprintf("subnet %s has no room for pods", p))
			continue
		}
		if families[p.Addr().Is4()] {
			problems = append(problems, fmt.Sprintf("subnet %s: a second subnet of the same IP family", p))
			continue
		}
		families[p.Addr().Is4()] = true
		ranges = append(ranges, Range{Subnet: p, Gateway: p.Addr().Next()})
	}
	if len(conf.Subnets) == 0 {
		problems = append(problems, "no subnets")
	}
	if len(problems) > 0 {
		return Network{}, &Error{Code: codeInvalidConfig, Msg: "invalid network config", Details: strings.Join(problems, "; ")}
	}
	return Network{Conf: conf, Ranges: ranges}, nil
}

func hostBits(p netip.Prefix) int { return p.Addr().BitLen() - p.Bits() }

// Args are the CNI_* environment variables of one call.
type Args struct {
	Command     string
	ContainerID string
	Netns       string
	IfName      string
}

// ParseArgs reads and checks the environment for command.
func ParseArgs(getenv func(string) string) (Args, error) {
	a := Args{Command: getenv("CNI_COMMAND"), ContainerID: getenv("CNI_CONTAINERID"), Netns: getenv("CNI_NETNS"), IfName: getenv("CNI_IFNAME")}
	var missing []string
	switch a.Command {
	case "VERSION":
		return a, nil
	case "ADD", "CHECK":
		if a.Netns == "" {
			missing = append(missing, "CNI_NETNS")
		}
		fallthrough
	case "DEL":
		if a.ContainerID == "" {
			missing = append(missing, "CNI_CONTAINERID")
		}
		if a.IfName == "" {
			missing = append(missing, "CNI_IFNAME")
		}
	case "":
		return a, errorf(codeInvalidEnvironment, "invalid environment", "CNI_COMMAND is not set")
	default:
		return a, errorf(codeInvalidEnvironment, "invalid environment", "unknown CNI_COMMAND %q", a.Command)
	}
	if len(missing) > 0 {
		return a, errorf(codeInvalidEnvironment, "invalid environment", "%s not set for %s", strings.Join(missing, ", "), a.Command)
	}
	if strings.ContainsAny(a.ContainerID, "/\n\x00") || len(a.IfName) > 15 || strings.ContainsAny(a.IfName, "/ \x00") {
		return a, errorf(codeInvalidEnvironment, "invalid environment", "container id %q or interface %q", a.ContainerID, a.IfName)
	}
	return a, nil
}

// HostVethName is the host side of a pod's veth pair: derived from the container and interface,
// so DEL finds it again (even with the network namespace gone) and two pods never collide.
func HostVethName(containerID, ifName string) string {
	sum := sha256.Sum256([]byte(containerID + "/" + ifName))
	return "skv" + hex.EncodeToString(sum[:])[:12]
}

// MasqueradeChain is the nat chain holding a network's masquerade rule.
func MasqueradeChain(network string) string {
	sum := sha256.Sum256([]byte(network))
	return "CNI-SKIFF-" + strings.ToUpper(hex.EncodeToString(sum[:])[:10])
}

// NextFree picks the address to lease in r: the first free one after last (where the previous
// lease stopped, so a released address is not reused at once), wrapping around. The network
// address, the gateway and (IPv4) the broadcast address are never handed out. It looks at no
// more than limit candidates (large IPv6 ranges).
func NextFree(r Range, last netip.Addr, used func(netip.Addr) bool, limit int) (netip.Addr, bool) {
	first := r.Subnet.Addr().Next()
	lastOf := lastAddr(r.Subnet)
	if r.Subnet.Addr().Is4() {
		lastOf = lastOf.Prev() // broadcast
	}
	start := first
	if last.IsValid() && r.Subnet.Contains(last) && last.Compare(lastOf) < 0 && last.Compare(first) >= 0 {
		start = last.Next()
	}
	a := start
	for range limit {
		if a != r.Gateway && !used(a) {
			return a, true
		}
		a = a.Next()
		if !a.IsValid() || a.Compare(lastOf) > 0 {
			a = first
		}
		if a == start {
			return netip.Addr{}, false
		}
	}
	return netip.Addr{}, false
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Lease is one address held for a container's interface.
type Lease struct {
	Addr    netip.Addr
	Range   Range
	Holder  string // containerID + "/" + ifName
	Network string
}

// Result types of the CNI spec (1.0.0, with the 0.3/0.4 "version" field when asked for).
type resultInterface struct {
	Name    string `json:"name"`
	Mac     string `json:"mac,omitempty"`
	Sandbox string `json:"sandbox,omitempty"`
}

type resultIP struct {
	Version   string `json:"version,omitempty"`
	Address   string `json:"address"`
	Gateway   string `json:"gateway,omitempty"`
	Interface *int   `json:"interface,omitempty"`
}

type resultRoute struct {
	Dst string `json:"dst"`
	GW  string `json:"gw,omitempty"`
}

// Result is what ADD prints.
type Result struct {
	CNIVersion string            `json:"cniVersion"`
	Interfaces []resultInterface `json:"interfaces,omitempty"`
	IPs        []resultIP        `json:"ips,omitempty"`
	Routes     []resultRoute     `json:"routes,omitempty"`
	DNS        struct{}          `json:"dns"`
}

// BuildResult is ADD's answer: the bridge, the host veth and the pod's interface (in its
// namespace), one address per range on the pod's interface, a default route per family.
func BuildResult(version string, n Network, a Args, bridgeMAC, hostMAC, podMAC string, addrs []netip.Addr) (Result, error) {
	if len(addrs) != len(n.Ranges) {
		return Result{}, errors.New("one address per range is needed")
	}
	r := Result{CNIVersion: version, Interfaces: []resultInterface{
		{Name: n.Conf.Bridge, Mac: bridgeMAC},
		{Name: HostVethName(a.ContainerID, a.IfName), Mac: hostMAC},
		{Name: a.IfName, Mac: podMAC, Sandbox: a.Netns},
	}}
	legacy := strings.HasPrefix(version, "0.")
	for i, rg := range n.Ranges {
		ip := resultIP{Address: netip.PrefixFrom(addrs[i], rg.Subnet.Bits()).String(), Gateway: rg.Gateway.String(), Interface: ptrTo(2)}
		dst := "0.0.0.0/0"
		if !rg.Subnet.Addr().Is4() {
			dst = "::/0"
		}
		if legacy {
			ip.Version = "4"
			if !rg.Subnet.Addr().Is4() {
				ip.Version = "6"
			}
		}
		r.IPs = append(r.IPs, ip)
		r.Routes = append(r.Routes, resultRoute{Dst: dst, GW: rg.Gateway.String()})
	}
	return r, nil
}

func ptrTo[T any](v T) *T { return &v }

// VersionResult is the answer to VERSION.
func VersionResult(version string) map[string]any {
	if version == "" {
		version = "1.0.0"
	}
	return map[string]any{"cniVersion": version, "supportedVersions": supportedVersions}
}
