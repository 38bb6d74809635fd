package servicealloc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExtraRanges is what the allocator reads and writes for cluster IPs outside its own range (the
// --service-cidr, kept as a bitmap): the cluster's ServiceCIDR objects, which add ranges, and one
// IPAddress object per cluster IP taken from them, as Kubernetes' allocator records every cluster
// IP. The IPAddress named by an IP is that IP's lock: its create fails when another Service holds
// it, on every API server alike. The API server implements it on its own stores.
type ExtraRanges interface {
	ServiceCIDRs(ctx context.Context) ([]*networkingv1.ServiceCIDR, error)
	IPAddresses(ctx context.Context) ([]*networkingv1.IPAddress, error)
	// CreateIPAddress stores ip; one that exists is an AlreadyExists error. dryRun only checks.
	CreateIPAddress(ctx context.Context, ip *networkingv1.IPAddress, dryRun bool) error
	// DeleteIPAddress removes the IPAddress named name (gone already: nil).
	DeleteIPAddress(ctx context.Context, name string) error
}

// Labels Kubernetes' allocator puts on the IPAddress objects it makes.
const (
	labelIPFamily  = "ipaddress.kubernetes.io/ip-family"
	labelManagedBy = "ipaddress.kubernetes.io/managed-by"
	managedBy      = "ipallocator.k8s.io"
)

// extraProbes is how many free addresses of the extra ranges a dynamic allocation tries before it
// gives up: each try that fails lost a race with another API server for the same address.
const extraProbes = 8

// SetExtraRanges lets the allocator hand out cluster IPs from the cluster's ServiceCIDRs beyond its
// own range (nil: only its own range, as before ServiceCIDRs existed).
func (a *Allocator) SetExtraRanges(x ExtraRanges) { a.extra = x }

// UsablePrefixes is the prefixes of the ServiceCIDRs that may hand out cluster IPs: every one not
// being deleted (a ServiceCIDR being deleted keeps the addresses it gave but gives no new one). It
// is pure.
func UsablePrefixes(cidrs []*networkingv1.ServiceCIDR) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		if c.DeletionTimestamp != nil {
			continue
		}
		for _, s := range c.Spec.CIDRs {
			if p, err := netip.ParsePrefix(s); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

// assignable says whether ip is an address a Service may get from prefix: inside it, and neither
// its network address nor, for IPv4, its broadcast address (as Kubernetes' allocator leaves them
// out). It is pure.
func assignable(prefix netip.Prefix, ip netip.Addr) bool {
	if !prefix.Contains(ip) || ip == prefix.Addr() {
		return false
	}
	if ip.Is4() && prefix.Bits() < 31 {
		return ip != lastAddr(prefix)
	}
	return true
}

// lastAddr is the highest address of prefix.
func lastAddr(prefix netip.Prefix) netip.Addr {
	b := prefix.Addr().AsSlice()
	for i := range b {
		hostBits := len(b)*8 - prefix.Bits() - (len(b)-1-i)*8
		switch {
		case hostBits >= 8:
			b[i] = 0xff
		case hostBits > 0:
			b[i] |= byte(1<<hostBits - 1)
		}
	}
	out, _ := netip.AddrFromSlice(b)
	return out
}

// PickFree is a free assignable address of prefix that the own range does not hold (those are
// the bitmap's), starting the scan at offset start (taken modulo the prefix's size, at most 2^20
// addresses scanned), or false when none is. It is pure.
func PickFree(prefix netip.Prefix, own *net.IPNet, used map[netip.Addr]bool, start uint64) (netip.Addr, bool) {
	hostBits := prefix.Addr().BitLen() - prefix.Bits()
	size := uint64(1) << min(hostBits, 20)
	base := prefix.Addr()
	for i := uint64(0); i < size; i++ {
		ip := addOffset(base, (start+i)%size)
		if !assignable(prefix, ip) || used[ip] || (own != nil && own.Contains(ip.AsSlice())) {
			continue
		}
		return ip, true
	}
	return netip.Addr{}, false
}

// addOffset is base plus n.
func addOffset(base netip.Addr, n uint64) netip.Addr {
	b := base.AsSlice()
	for i := len(b) - 1; i >= 0 && n > 0; i-- {
		sum := uint64(b[i]) + n&0xff
		b[i] = byte(sum)
		n = n>>8 + sum>>8
	}
	out, _ := netip.AddrFromSlice(b)
	return out
}

// newIPAddress is the IPAddress that records ip as svc's cluster IP.
func newIPAddress(ip netip.Addr, svc *corev1.Service) *networkingv1.IPAddress {
	family := string(corev1.IPv4Protocol)
	if ip.Is6() {
		family = string(corev1.IPv6Protocol)
	}
	return &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip.String(), Labels: map[string]string{labelIPFamily: family, labelManagedBy: managedBy}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
			Group: "", Resource: "services", Namespace: svc.Namespace, Name: svc.Name,
		}},
	}
}

// extraRangeOf is the usable ServiceCIDR prefix that may give ip, or false.
func (a *Allocator) extraRangeOf(ctx context.Context, ip netip.Addr) (bool, error) {
	if a.extra == nil {
		return false, nil
	}
	cidrs, err := a.extra.ServiceCIDRs(ctx)
	if err != nil {
		return false, fmt.Errorf("read the ServiceCIDRs: %w", err)
	}
	for _, p := range UsablePrefixes(cidrs) {
		if assignable(p, ip) {
			return true, nil
		}
	}
	return false, nil
}

// reserveExtra records the requested ip, outside the own range, as svc's: errAllocated when another
// Service holds it.
func (a *Allocator) reserveExtra(ctx context.Context, ip netip.Addr, svc *corev1.Service, dryRun bool) error {
	err := a.extra.CreateIPAddress(ctx, newIPAddress(ip, svc), dryRun)
	if apierrors.IsAlreadyExists(err) {
		return errAllocated
	}
	return err
}

// allocateExtra gives svc a free address of the ServiceCIDRs beyond the own range (when that one is
// full), recording it as an IPAddress.
func (a *Allocator) allocateExtra(ctx context.Context, svc *corev1.Service, dryRun bool) (netip.Addr, error) {
	if a.extra == nil {
		return netip.Addr{}, errRangeFull
	}
	cidrs, err := a.extra.ServiceCIDRs(ctx)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("read the ServiceCIDRs: %w", err)
	}
	addrs, err := a.extra.IPAddresses(ctx)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("read the IPAddresses: %w", err)
	}
	used := map[netip.Addr]bool{}
	for _, o := range addrs {
		if ip, err := netip.ParseAddr(o.Name); err == nil {
			used[ip] = true
		}
	}
	for _, p := range UsablePrefixes(cidrs) {
		for range extraProbes {
			ip, ok := PickFree(p, a.cidr, used, rand.Uint64())
			if !ok {
				break
			}
			err := a.reserveExtra(ctx, ip, svc, dryRun)
			if err == nil {
				return ip, nil
			}
			if err != errAllocated {
				return netip.Addr{}, err
			}
			used[ip] = true
		}
	}
	return netip.Addr{}, errRangeFull
}

// releaseExtra gives back a cluster IP of the extra ranges, trying again a few times as
// releaseWithRetry does.
func (a *Allocator) releaseExtra(ctx context.Context, ip string) {
	if a.extra == nil {
		return
	}
	retry(ctx, func() error { return a.extra.DeleteIPAddress(ctx, ip) })
}
