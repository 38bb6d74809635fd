package cni

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// host is the node side the plugin works on: netlink in the host's network namespace, iptables
// for the masquerade rule, sysctls. Tests run it inside a network namespace of their own.
type host struct {
	nl *netlink.Handle
	// iptables runs iptables (or ip6tables) with args; replaced in tests that must not touch the
	// host's tables.
	iptables func(ctx context.Context, v6 bool, args ...string) error
	// sysctl writes a sysctl file under /proc/sys when its value differs.
	sysctl func(path, value string) error
	// bootID names this boot of the machine.
	bootID func() string
}

func newHost() (*host, error) {
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	return &host{nl: h, iptables: runIPTables, sysctl: writeSysctl, bootID: readBootID}, nil
}

func readBootID() string {
	raw, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(raw))
}

func (h *host) close() { h.nl.Close() }

func runIPTables(ctx context.Context, v6 bool, args ...string) error {
	bin := "iptables"
	if v6 {
		bin = "ip6tables"
	}
	out, err := exec.CommandContext(ctx, bin, append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func writeSysctl(path, value string) error {
	full := "/proc/sys/" + path
	if cur, err := os.ReadFile(full); err == nil && strings.TrimSpace(string(cur)) == value {
		return nil
	}
	if err := os.WriteFile(full, []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", path, value, err)
	}
	return nil
}

// ensureBridge makes the node's bridge exist, be up and carry each range's gateway address, and
// the network's masquerade rules exist.
func (h *host) ensureBridge(ctx context.Context, n Network) (netlink.Link, error) {
	br, err := h.nl.LinkByName(n.Conf.Bridge)
	if err != nil {
		if !isNotFound(err) {
			return nil, fmt.Errorf("bridge %s: %w", n.Conf.Bridge, err)
		}
		attrs := netlink.NewLinkAttrs()
		attrs.Name = n.Conf.Bridge
		if n.Conf.MTU > 0 {
			attrs.MTU = n.Conf.MTU
		}
		// EEXIST: another sandbox's plugin was first.
		if err := h.nl.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil && !errors.Is(err, syscall.EEXIST) {
			return nil, fmt.Errorf("create bridge %s: %w", n.Conf.Bridge, err)
		}
		if br, err = h.nl.LinkByName(n.Conf.Bridge); err != nil {
			return nil, fmt.Errorf("bridge %s: %w", n.Conf.Bridge, err)
		}
	}
	if _, ok := br.(*netlink.Bridge); !ok {
		return nil, fmt.Errorf("%s exists and is a %s, not a bridge", n.Conf.Bridge, br.Type())
	}
	if br.Attrs().Flags&net.FlagUp == 0 {
		if err := h.nl.LinkSetUp(br); err != nil {
			return nil, fmt.Errorf("bridge %s up: %w", n.Conf.Bridge, err)
		}
	}
	for _, r := range n.Ranges {
		addr := &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(r.Gateway, r.Subnet.Bits()))}
		if !r.Gateway.Is4() {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := h.nl.AddrAdd(br, addr); err != nil && !errors.Is(err, syscall.EEXIST) {
			return nil, fmt.Errorf("bridge %s address %s: %w", n.Conf.Bridge, addr.IPNet, err)
		}
	}
	for _, r := range n.Ranges {
		key := "net/ipv4/ip_forward"
		if !r.Subnet.Addr().Is4() {
			key = "net/ipv6/conf/all/forwarding"
		}
		if err := h.sysctl(key, "1"); err != nil {
			return nil, err
		}
	}
	if n.Conf.IPMasq {
		if err := h.masqueradeOnce(ctx, n, br.Attrs().Index); err != nil {
			return nil, err
		}
	}
	return br, nil
}

// masqueradeOnce installs the masquerade rules once per bridge and boot: a marker file named
// after the boot and the bridge's index says it was done, so an ADD runs no iptables at all
// unless the bridge is new (created, or the node rebooted). A lock keeps two ADDs from
// appending the same rules twice.
func (h *host) masqueradeOnce(ctx context.Context, n Network, bridgeIndex int) error {
	dir := filepath.Join(n.Conf.StateDir, n.Conf.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	marker := filepath.Join(dir, fmt.Sprintf("masquerade-%s-%s-%d", h.bootID(), n.Conf.Bridge, bridgeIndex))
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	lock, err := os.OpenFile(filepath.Join(dir, "masquerade.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("masquerade lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("masquerade lock: %w", err)
	}
	if _, err := os.Stat(marker); err == nil {
		return nil // another ADD did it meanwhile
	}
	if err := h.ensureMasquerade(ctx, n); err != nil {
		return err
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return fmt.Errorf("masquerade marker: %w", err)
	}
	return nil
}

// ensureMasquerade installs the network's masquerade chain: traffic from a pod CIDR to anything
// outside it (but multicast) leaves with the node's address. One chain per network, not one per
// pod as the bridge plugin's ipMasq makes.
func (h *host) ensureMasquerade(ctx context.Context, n Network) error {
	chain := MasqueradeChain(n.Conf.Name)
	for _, r := range n.Ranges {
		v6 := !r.Subnet.Addr().Is4()
		multicast := "224.0.0.0/4"
		if v6 {
			multicast = "ff00::/8"
		}
		_ = h.iptables(ctx, v6, "-t", "nat", "-N", chain) // exists already: fine
		rules := [][]string{
			{chain, "-d", r.Subnet.String(), "-j", "ACCEPT"},
			{chain, "!", "-d", multicast, "-j", "MASQUERADE"},
			{"POSTROUTING", "-s", r.Subnet.String(), "-m", "comment", "--comment", "skiff pod network " + n.Conf.Name, "-j", chain},
		}
		for _, rule := range rules {
			if h.iptables(ctx, v6, append([]string{"-t", "nat", "-C"}, rule...)...) == nil {
				continue
			}
			if err := h.iptables(ctx, v6, append([]string{"-t", "nat", "-A"}, rule...)...); err != nil {
				return fmt.Errorf("masquerade for %s: %w", n.Conf.Name, err)
			}
		}
	}
	return nil
}

// RemoveMasquerade deletes the masquerade chain of network for the given pod CIDRs (node
// teardown and tests); what is absent is skipped.
func RemoveMasquerade(ctx context.Context, network string, subnets []string) error {
	chain := MasqueradeChain(network)
	var errs []error
	for _, s := range subnets {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("subnet %q: %w", s, err)
		}
		v6 := !p.Addr().Is4()
		jump := []string{"-t", "nat", "POSTROUTING", "-s", p.Masked().String(), "-m", "comment", "--comment", "skiff pod network " + network, "-j", chain}
		for runIPTables(ctx, v6, append([]string{"-D"}, jump...)...) == nil {
		}
		_ = runIPTables(ctx, v6, "-t", "nat", "-F", chain)
		if err := runIPTables(ctx, v6, "-t", "nat", "-X", chain); err != nil && !strings.Contains(err.Error(), "No chain") && !strings.Contains(err.Error(), "does not exist") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENOENT)
}

// podLinks are the MACs of what ADD made.
type podLinks struct {
	bridgeMAC, hostMAC, podMAC string
}

// attach creates the pod's veth pair (the pod end named ifName directly in its namespace, the
// host end on the bridge), gives the pod end its addresses and default routes, and brings both
// up. A veth left by an earlier ADD of the same container is replaced.
func (h *host) attach(br netlink.Link, n Network, a Args, addrs []netip.Addr) (podLinks, error) {
	ns, err := netns.GetFromPath(a.Netns)
	if err != nil {
		return podLinks{}, fmt.Errorf("open netns %s: %w", a.Netns, err)
	}
	defer ns.Close()
	pod, err := netlink.NewHandleAt(ns)
	if err != nil {
		return podLinks{}, fmt.Errorf("netlink in %s: %w", a.Netns, err)
	}
	defer pod.Close()

	hostName := HostVethName(a.ContainerID, a.IfName)
	if old, err := h.nl.LinkByName(hostName); err == nil {
		if err := h.nl.LinkDel(old); err != nil {
			return podLinks{}, fmt.Errorf("remove old veth %s: %w", hostName, err)
		}
	}
	if old, err := pod.LinkByName(a.IfName); err == nil {
		if err := pod.LinkDel(old); err != nil {
			return podLinks{}, fmt.Errorf("remove old %s in %s: %w", a.IfName, a.Netns, err)
		}
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = hostName
	attrs.MasterIndex = br.Attrs().Index
	if n.Conf.MTU > 0 {
		attrs.MTU = n.Conf.MTU
	}
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: a.IfName, PeerNamespace: netlink.NsFd(int(ns))}
	if err := h.nl.LinkAdd(veth); err != nil {
		return podLinks{}, fmt.Errorf("create veth %s/%s: %w", hostName, a.IfName, err)
	}
	hostLink, err := h.nl.LinkByName(hostName)
	if err != nil {
		return podLinks{}, fmt.Errorf("veth %s: %w", hostName, err)
	}
	if n.Conf.HairpinMode {
		if err := h.nl.LinkSetHairpin(hostLink, true); err != nil {
			return podLinks{}, fmt.Errorf("hairpin on %s: %w", hostName, err)
		}
	}
	if err := h.nl.LinkSetUp(hostLink); err != nil {
		return podLinks{}, fmt.Errorf("veth %s up: %w", hostName, err)
	}
	podLink, err := pod.LinkByName(a.IfName)
	if err != nil {
		return podLinks{}, fmt.Errorf("%s in %s: %w", a.IfName, a.Netns, err)
	}
	for i, r := range n.Ranges {
		addr := &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(addrs[i], r.Subnet.Bits()))}
		if !r.Subnet.Addr().Is4() {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := pod.AddrAdd(podLink, addr); err != nil {
			return podLinks{}, fmt.Errorf("address %s on %s: %w", addr.IPNet, a.IfName, err)
		}
	}
	if err := pod.LinkSetUp(podLink); err != nil {
		return podLinks{}, fmt.Errorf("%s up: %w", a.IfName, err)
	}
	for _, r := range n.Ranges {
		route := &netlink.Route{LinkIndex: podLink.Attrs().Index, Gw: r.Gateway.AsSlice()}
		if r.Subnet.Addr().Is4() {
			route.Family = netlink.FAMILY_V4
		} else {
			route.Family = netlink.FAMILY_V6
		}
		if err := pod.RouteReplace(route); err != nil {
			return podLinks{}, fmt.Errorf("default route via %s in %s: %w", r.Gateway, a.Netns, err)
		}
	}
	return podLinks{bridgeMAC: br.Attrs().HardwareAddr.String(), hostMAC: hostLink.Attrs().HardwareAddr.String(), podMAC: podLink.Attrs().HardwareAddr.String()}, nil
}

// detach removes the pod's veth pair; gone already is fine.
func (h *host) detach(a Args) error {
	hostName := HostVethName(a.ContainerID, a.IfName)
	link, err := h.nl.LinkByName(hostName)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return fmt.Errorf("veth %s: %w", hostName, err)
	}
	if err := h.nl.LinkDel(link); err != nil && !isNotFound(err) {
		return fmt.Errorf("remove veth %s: %w", hostName, err)
	}
	return nil
}

// check verifies what ADD made is still there: the host veth on the bridge, the pod's interface
// with its addresses.
func (h *host) check(n Network, a Args, addrs []netip.Addr) error {
	hostName := HostVethName(a.ContainerID, a.IfName)
	br, err := h.nl.LinkByName(n.Conf.Bridge)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", n.Conf.Bridge, err)
	}
	link, err := h.nl.LinkByName(hostName)
	if err != nil {
		return fmt.Errorf("veth %s: %w", hostName, err)
	}
	if link.Attrs().MasterIndex != br.Attrs().Index {
		return fmt.Errorf("veth %s is not on bridge %s", hostName, n.Conf.Bridge)
	}
	ns, err := netns.GetFromPath(a.Netns)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", a.Netns, err)
	}
	defer ns.Close()
	pod, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", a.Netns, err)
	}
	defer pod.Close()
	podLink, err := pod.LinkByName(a.IfName)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", a.IfName, a.Netns, err)
	}
	have, err := pod.AddrList(podLink, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("addresses of %s: %w", a.IfName, err)
	}
	for _, want := range addrs {
		found := false
		for _, got := range have {
			if ip, ok := netip.AddrFromSlice(got.IP); ok && ip.Unmap() == want {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s in %s lacks address %s", a.IfName, a.Netns, want)
		}
	}
	return nil
}
