package podnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Protocol is the rtnetlink protocol number of skiff's pod routes (`ip route show proto 73`).
const Protocol = 73

// Host is the node's routing table and nat table, as far as the agent touches them: the routes
// with Protocol and Metric, and one nat chain.
type Host struct {
	// Metric tells this node's routes from another skiff node's sharing the host's namespace.
	Metric int
	// Chain is the node's nat chain, hooked from POSTROUTING.
	Chain string
}

// OnLink lists the host's IPv4 subnets (not loopback).
func (h Host) OnLink() ([]netip.Prefix, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if a.IPNet == nil || a.IP.IsLoopback() {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.IP.To4())
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, netip.PrefixFrom(ip, ones).Masked())
	}
	return out, nil
}

// Routes are the pod routes present: this node's protocol and metric, main table.
func (h Host) Routes() ([]Route, error) {
	rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: Protocol, Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	var out []Route
	for _, r := range rs {
		if r.Priority != h.Metric || r.Dst == nil {
			continue
		}
		dst, ok := netip.AddrFromSlice(r.Dst.IP.To4())
		if !ok {
			continue
		}
		ones, _ := r.Dst.Mask.Size()
		gw, _ := netip.AddrFromSlice(r.Gw.To4())
		out = append(out, Route{Dst: netip.PrefixFrom(dst, ones), Gw: gw})
	}
	return out, nil
}

func (h Host) nl(r Route) *netlink.Route {
	return &netlink.Route{
		Dst:      &net.IPNet{IP: r.Dst.Addr().AsSlice(), Mask: net.CIDRMask(r.Dst.Bits(), 32)},
		Gw:       r.Gw.AsSlice(),
		Protocol: Protocol,
		Priority: h.Metric,
		Table:    unix.RT_TABLE_MAIN,
	}
}

// Replace adds r or changes its gateway (the kernel finds the device toward the gateway).
func (h Host) Replace(r Route) error {
	if err := netlink.RouteReplace(h.nl(r)); err != nil {
		return fmt.Errorf("route %s: %w", r, err)
	}
	return nil
}

// Delete removes r; one already gone is fine.
func (h Host) Delete(r Route) error {
	if err := netlink.RouteDel(h.nl(r)); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("delete route %s: %w", r, err)
	}
	return nil
}

func iptables(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "iptables", append([]string{"-w"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// SetMasquerade rewrites the node's nat chain with rules (MasqueradeRules) and makes sure
// POSTROUTING jumps to it.
func (h Host) SetMasquerade(ctx context.Context, rules [][]string) error {
	if iptables(ctx, "-t", "nat", "-S", h.Chain) != nil {
		if err := iptables(ctx, "-t", "nat", "-N", h.Chain); err != nil {
			return err
		}
	}
	if err := iptables(ctx, "-t", "nat", "-F", h.Chain); err != nil {
		return err
	}
	for _, r := range rules {
		if err := iptables(ctx, append([]string{"-t", "nat"}, r...)...); err != nil {
			return err
		}
	}
	hook := []string{"POSTROUTING", "-m", "comment", "--comment", "skiff pod network", "-j", h.Chain}
	if iptables(ctx, append([]string{"-t", "nat", "-C"}, hook...)...) != nil {
		return iptables(ctx, append([]string{"-t", "nat", "-A"}, hook...)...)
	}
	return nil
}

// RemoveMasquerade removes the hook and the chain; absent ones are fine.
func (h Host) RemoveMasquerade(ctx context.Context) error {
	hook := []string{"POSTROUTING", "-m", "comment", "--comment", "skiff pod network", "-j", h.Chain}
	for iptables(ctx, append([]string{"-t", "nat", "-D"}, hook...)...) == nil {
	}
	if iptables(ctx, "-t", "nat", "-S", h.Chain) != nil {
		return nil
	}
	if err := iptables(ctx, "-t", "nat", "-F", h.Chain); err != nil {
		return err
	}
	return iptables(ctx, "-t", "nat", "-X", h.Chain)
}
