package servicealloc

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/core"
	"github.com/skiff-sh/skiff/internal/storage"
)

// Default node port range, as Kubernetes'.
const (
	nodePortBase = 30000
	nodePortSize = 2768
)

// bitmapRange hands out offsets of a range, kept as a bitmap in one RangeAllocation object in etcd so
// every API server allocates from the same state with compare-and-swap (as Kubernetes did before
// IPAddress objects).
type bitmapRange struct {
	store storage.Interface
	key   string
	size  int
	// first and last bound the offsets handed out to a request for any free one (inclusive): an
	// IP range leaves out its network and broadcast addresses, a port range nothing.
	first, last int
	desc        string // "10.43.0.0/16" or "30000-32767", for messages and the object's Range
}

var errRangeFull = errors.New("range is full")
var errAllocated = errors.New("provided value is already allocated")

// allocate takes offset want (or any free offset when want < 0) and returns it. dryRun only checks.
func (b *bitmapRange) allocate(ctx context.Context, want int, dryRun bool) (int, error) {
	got := -1
	try := func(current runtime.Object) (runtime.Object, error) {
		ra := current.DeepCopyObject().(*corev1.RangeAllocation)
		bits := new(big.Int).SetBytes(ra.Data)
		switch {
		case want >= 0:
			if bits.Bit(want) == 1 {
				return nil, errAllocated
			}
			got = want
		default:
			n := b.last - b.first + 1
			start := rand.IntN(n)
			got = -1
			for i := 0; i < n; i++ {
				o := b.first + (start+i)%n
				if bits.Bit(o) == 0 {
					got = o
					break
				}
			}
			if got < 0 {
				return nil, errRangeFull
			}
		}
		bits.SetBit(bits, got, 1)
		ra.Name, ra.Range, ra.Data = "", b.desc, bits.Bytes()
		return ra, nil
	}
	if dryRun {
		current := &corev1.RangeAllocation{}
		if err := b.store.Get(ctx, b.key, storage.GetOptions{IgnoreNotFound: true}, current); err != nil && !storage.IsNotFound(err) {
			return -1, err
		}
		_, err := try(current)
		return got, err
	}
	err := b.store.GuaranteedUpdate(ctx, b.key, &corev1.RangeAllocation{}, true, nil, try)
	return got, err
}

// release frees offset.
func (b *bitmapRange) release(ctx context.Context, offset int) error {
	return b.store.GuaranteedUpdate(ctx, b.key, &corev1.RangeAllocation{}, true, nil, func(current runtime.Object) (runtime.Object, error) {
		ra := current.DeepCopyObject().(*corev1.RangeAllocation)
		bits := new(big.Int).SetBytes(ra.Data)
		bits.SetBit(bits, offset, 0)
		ra.Range, ra.Data = b.desc, bits.Bytes()
		return ra, nil
	})
}

// Allocator gives services their cluster IPs and node ports; it implements core.ServiceAllocator,
// whose hooks on the services strategy call it.
type Allocator struct {
	cidr      *net.IPNet
	ips       *bitmapRange
	nodePorts *bitmapRange
	// extra gives cluster IPs beyond cidr, from the cluster's ServiceCIDRs (servicecidrs.go).
	extra ExtraRanges
}

var _ core.ServiceAllocator = &Allocator{}

// StorageResource is the resource whose storage keeps the allocation bitmaps (RangeAllocation
// objects under /registry/ranges/); it is not served.
func StorageResource() *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion, Kind: "RangeAllocation", Plural: "rangeallocations",
		New: func() runtime.Object { return &corev1.RangeAllocation{} }, NewList: func() runtime.Object { return &corev1.PodList{} },
	}
}

// New allocates cluster IPs from cidr and node ports from Kubernetes' default range, keeping the state
// in store (opened for StorageResource) so every API server shares it.
func New(cidr *net.IPNet, store storage.Interface) *Allocator {
	ones, bits := cidr.Mask.Size()
	size := 1 << uint(bits-ones)
	if size > 1<<20 {
		size = 1 << 20
	}
	return &Allocator{
		cidr:      cidr,
		ips:       &bitmapRange{store: store, key: "/registry/ranges/serviceips", size: size, first: 1, last: size - 2, desc: cidr.String()},
		nodePorts: &bitmapRange{store: store, key: "/registry/ranges/servicenodeports", size: nodePortSize, first: 0, last: nodePortSize - 1, desc: fmt.Sprintf("%d-%d", nodePortBase, nodePortBase+nodePortSize-1)},
	}
}

func (a *Allocator) ipOffset(ip net.IP) (int, bool) {
	if !a.cidr.Contains(ip) {
		return 0, false
	}
	base := new(big.Int).SetBytes(a.cidr.IP.To16())
	off := new(big.Int).Sub(new(big.Int).SetBytes(ip.To16()), base)
	o := int(off.Int64())
	return o, o >= a.ips.first && o <= a.ips.last // network and broadcast addresses are never handed out
}

func (a *Allocator) ipAt(offset int) net.IP {
	base := new(big.Int).SetBytes(a.cidr.IP.To16())
	ip := new(big.Int).Add(base, big.NewInt(int64(offset))).Bytes()
	out := make(net.IP, net.IPv6len)
	copy(out[net.IPv6len-len(ip):], ip)
	if v4 := out.To4(); v4 != nil && a.cidr.IP.To4() != nil {
		return v4
	}
	return out
}

// allocation records what one request took, so a failed write gives it back.
type allocation struct {
	ips   []int
	ports []int
	addrs []string // cluster IPs of the extra ranges (their IPAddress objects)
}

func (a *Allocator) rollback(ctx context.Context, done *allocation) {
	for _, o := range done.ips {
		_ = a.ips.release(ctx, o)
	}
	for _, p := range done.ports {
		_ = a.nodePorts.release(ctx, p)
	}
	for _, ip := range done.addrs {
		a.releaseExtra(ctx, ip)
	}
}

func wantsNodePorts(t corev1.ServiceType) bool {
	return t == corev1.ServiceTypeNodePort || t == corev1.ServiceTypeLoadBalancer
}

// AllocateCreate fills in a new service's cluster IP and node ports; release gives them back.
func (a *Allocator) AllocateCreate(ctx context.Context, svc *corev1.Service, dryRun bool) (release func(context.Context), err error) {
	done, err := a.allocateForCreate(ctx, svc, dryRun)
	if err != nil {
		return nil, err
	}
	return a.releaser(done, dryRun), nil
}

// AllocateUpdate gives an updated service what its new shape needs and the stored one lacked.
func (a *Allocator) AllocateUpdate(ctx context.Context, svc, old *corev1.Service, dryRun bool) (release func(context.Context), err error) {
	done, err := a.allocateForUpdate(ctx, svc, old, dryRun)
	if err != nil {
		return nil, err
	}
	return a.releaser(done, dryRun), nil
}

// Release gives back everything a deleted service held.
func (a *Allocator) Release(ctx context.Context, svc *corev1.Service) { a.releaseService(ctx, svc) }

// releaser gives back done; a dry run held nothing.
func (a *Allocator) releaser(done *allocation, dryRun bool) func(context.Context) {
	return func(ctx context.Context) {
		if !dryRun {
			a.rollback(ctx, done)
		}
	}
}

// allocateForCreate fills in a new service's cluster IP and node ports.
func (a *Allocator) allocateForCreate(ctx context.Context, svc *corev1.Service, dryRun bool) (*allocation, error) {
	done := &allocation{}
	fail := func(errs field.ErrorList) (*allocation, error) {
		if !dryRun {
			a.rollback(ctx, done)
		}
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, errs)
	}
	if svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		if err := a.allocateClusterIP(ctx, svc, done, dryRun); err != nil {
			return fail(field.ErrorList{err})
		}
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		if len(svc.Spec.IPFamilies) == 0 {
			family := corev1.IPv4Protocol
			if net.ParseIP(svc.Spec.ClusterIP).To4() == nil {
				family = corev1.IPv6Protocol
			}
			svc.Spec.IPFamilies = []corev1.IPFamily{family}
		}
	}
	if err := a.allocateNodePorts(ctx, svc, done, dryRun); err != nil {
		if !dryRun {
			a.rollback(ctx, done)
		}
		return nil, err
	}
	if core.NeedsHealthCheck(svc) {
		if err := a.allocateHealthCheckNodePort(ctx, svc, done, dryRun); err != nil {
			if !dryRun {
				a.rollback(ctx, done)
			}
			return nil, err
		}
	}
	return done, nil
}

// allocateClusterIP gives svc the cluster IP it asks for, or any free one: from the own range's
// bitmap, else (an address beyond the own range, or the own range full) from the cluster's
// ServiceCIDRs, recorded as an IPAddress.
func (a *Allocator) allocateClusterIP(ctx context.Context, svc *corev1.Service, done *allocation, dryRun bool) *field.Error {
	path := field.NewPath("spec", "clusterIPs").Index(0)
	if svc.Spec.ClusterIP == "" {
		o, err := a.ips.allocate(ctx, -1, dryRun)
		if err == nil {
			done.ips = append(done.ips, o)
			svc.Spec.ClusterIP = a.ipAt(o).String()
			return nil
		}
		if !errors.Is(err, errRangeFull) {
			return field.InternalError(path, fmt.Errorf("failed to allocate a serviceIP: %v", err))
		}
		ip, err := a.allocateExtra(ctx, svc, dryRun)
		if err != nil {
			return field.InternalError(path, fmt.Errorf("failed to allocate a serviceIP: %v", err))
		}
		done.addrs = append(done.addrs, ip.String())
		svc.Spec.ClusterIP = ip.String()
		return nil
	}
	alreadyAllocated := field.Invalid(path, svc.Spec.ClusterIP, fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", svc.Spec.ClusterIP))
	ip := net.ParseIP(svc.Spec.ClusterIP)
	if o, ok := a.ipOffset(ip); ip != nil && ok {
		if _, err := a.ips.allocate(ctx, o, dryRun); err != nil {
			return alreadyAllocated
		}
		done.ips = append(done.ips, o)
		return nil
	}
	outOfRange := field.Invalid(path, svc.Spec.ClusterIP, fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", svc.Spec.ClusterIP, svc.Spec.ClusterIP, a.cidr))
	addr, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || a.cidr.Contains(ip) {
		return outOfRange
	}
	inExtra, err := a.extraRangeOf(ctx, addr.Unmap())
	if err != nil {
		return field.InternalError(path, err)
	}
	if !inExtra {
		return outOfRange
	}
	if err := a.reserveExtra(ctx, addr.Unmap(), svc, dryRun); err != nil {
		if errors.Is(err, errAllocated) {
			return alreadyAllocated
		}
		return field.InternalError(path, fmt.Errorf("failed to allocate IP %s: %v", svc.Spec.ClusterIP, err))
	}
	done.addrs = append(done.addrs, addr.Unmap().String())
	return nil
}

// allocateHealthCheckNodePort gives a LoadBalancer Service with externalTrafficPolicy Local its
// health-check node port from the node-port range: the one it asks for (refused with 422 when
// taken or out of range) or any free one.
func (a *Allocator) allocateHealthCheckNodePort(ctx context.Context, svc *corev1.Service, done *allocation, dryRun bool) error {
	path := field.NewPath("spec", "healthCheckNodePort")
	if want := svc.Spec.HealthCheckNodePort; want != 0 {
		o := int(want) - nodePortBase
		if o < 0 || o >= nodePortSize {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{field.Invalid(path, want, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", a.nodePorts.desc))})
		}
		if _, err := a.nodePorts.allocate(ctx, o, dryRun); err != nil {
			if errors.Is(err, errAllocated) {
				return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{field.Invalid(path, want, "provided port is already allocated")})
			}
			return apierrors.NewInternalError(fmt.Errorf("reserving health-check node port %d: %w", want, err))
		}
		done.ports = append(done.ports, o)
		return nil
	}
	o, err := a.nodePorts.allocate(ctx, -1, dryRun)
	if err != nil {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{field.InternalError(path, fmt.Errorf("failed to allocate a health-check node port: %v", err))})
	}
	done.ports = append(done.ports, o)
	svc.Spec.HealthCheckNodePort = int32(nodePortBase + o)
	return nil
}

// allocateNodePorts gives every port of a NodePort or LoadBalancer service without a nodePort one.
func (a *Allocator) allocateNodePorts(ctx context.Context, svc *corev1.Service, done *allocation, dryRun bool) error {
	if !wantsNodePorts(svc.Spec.Type) {
		return nil
	}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
		if p.NodePort == 0 {
			o, err := a.nodePorts.allocate(ctx, -1, dryRun)
			if err != nil {
				return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{field.InternalError(path, fmt.Errorf("failed to allocate a nodePort: %v", err))})
			}
			done.ports = append(done.ports, o)
			p.NodePort = int32(nodePortBase + o)
			continue
		}
		if err := a.reserveNodePort(ctx, svc, i, done, dryRun); err != nil {
			return err
		}
	}
	return nil
}

// reserveNodePort reserves the node port svc's port i asks for: refused (422) when it is out of
// the range or taken.
func (a *Allocator) reserveNodePort(ctx context.Context, svc *corev1.Service, i int, done *allocation, dryRun bool) error {
	p := svc.Spec.Ports[i]
	path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
	o := int(p.NodePort) - nodePortBase
	if o < 0 || o >= nodePortSize {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{field.Invalid(path, p.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", a.nodePorts.desc))})
	}
	if _, err := a.nodePorts.allocate(ctx, o, dryRun); err != nil {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{field.Invalid(path, p.NodePort, "provided port is already allocated")})
	}
	done.ports = append(done.ports, o)
	return nil
}

// releaseService gives back everything a deleted service held.
func (a *Allocator) releaseService(ctx context.Context, svc *corev1.Service) {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		if o, ok := a.ipOffset(ip); ok {
			releaseWithRetry(ctx, a.ips, o)
		} else if ip != nil && !a.cidr.Contains(ip) {
			a.releaseExtra(ctx, ip.String())
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort >= nodePortBase && p.NodePort < nodePortBase+nodePortSize {
			releaseWithRetry(ctx, a.nodePorts, int(p.NodePort)-nodePortBase)
		}
	}
	if core.NeedsHealthCheck(svc) {
		a.releaseHealthCheckNodePort(ctx, svc.Spec.HealthCheckNodePort)
	}
}

func (a *Allocator) releaseHealthCheckNodePort(ctx context.Context, port int32) {
	if port >= nodePortBase && port < nodePortBase+nodePortSize {
		releaseWithRetry(ctx, a.nodePorts, int(port)-nodePortBase)
	}
}

// ReleaseDropped gives back what old held and the written svc does not, once the update was
// written: node ports it no longer names (a port's nodePort changed, a port removed, the type no
// longer NodePort or LoadBalancer), and its health-check node port when it needs none any more
// (type or externalTrafficPolicy changed).
func (a *Allocator) ReleaseDropped(ctx context.Context, svc, old *corev1.Service) {
	kept := map[int32]bool{}
	if wantsNodePorts(svc.Spec.Type) {
		for _, p := range svc.Spec.Ports {
			kept[p.NodePort] = true
		}
	}
	if core.NeedsHealthCheck(svc) {
		kept[svc.Spec.HealthCheckNodePort] = true
	}
	if wantsNodePorts(old.Spec.Type) {
		for _, p := range old.Spec.Ports {
			if !kept[p.NodePort] && p.NodePort >= nodePortBase && p.NodePort < nodePortBase+nodePortSize {
				kept[p.NodePort] = true // a port named twice (TCP and UDP) goes back once
				releaseWithRetry(ctx, a.nodePorts, int(p.NodePort)-nodePortBase)
			}
		}
	}
	if core.NeedsHealthCheck(old) && !kept[old.Spec.HealthCheckNodePort] {
		a.releaseHealthCheckNodePort(ctx, old.Spec.HealthCheckNodePort)
	}
}

// releaseWithRetry gives an offset back, trying again a few times: the deletion that frees it has
// already happened, so a release lost to a passing etcd error (a slow fsync's "request timed out")
// would leak the address for good.
func releaseWithRetry(ctx context.Context, b *bitmapRange, offset int) {
	retry(ctx, func() error { return b.release(ctx, offset) })
}

// retry calls release up to three times, until it succeeds or ctx ends.
func retry(ctx context.Context, release func() error) {
	for attempt := range 3 {
		if err := release(); err == nil || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
}

// allocateForUpdate gives an updated service what its new shape needs and the stored one lacked: a
// cluster IP when it stops being ExternalName, node ports when it becomes NodePort or LoadBalancer.
// Specific node ports chosen in an update are not reserved, and ports an update drops are not given
// back (see README: known gaps).
func (a *Allocator) allocateForUpdate(ctx context.Context, svc, old *corev1.Service, dryRun bool) (*allocation, error) {
	done := &allocation{}
	if svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP == "" {
		if err := a.allocateClusterIP(ctx, svc, done, dryRun); err != nil {
			return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{err})
		}
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if !wantsNodePorts(svc.Spec.Type) {
		return done, nil
	}
	// Node ports the old Service held stay its own; one it asks for anew is reserved as on a
	// create (in the range, not taken), or the update is refused.
	held := map[int32]bool{}
	if wantsNodePorts(old.Spec.Type) {
		for _, p := range old.Spec.Ports {
			held[p.NodePort] = true
		}
	}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.NodePort != 0 {
			if held[p.NodePort] {
				continue
			}
			if err := a.reserveNodePort(ctx, svc, i, done, dryRun); err != nil {
				if !dryRun {
					a.rollback(ctx, done)
				}
				return nil, err
			}
			held[p.NodePort] = true
			continue
		}
		o, err := a.nodePorts.allocate(ctx, -1, dryRun)
		if err != nil {
			if !dryRun {
				a.rollback(ctx, done)
			}
			return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{field.InternalError(field.NewPath("spec", "ports").Index(i).Child("nodePort"), fmt.Errorf("failed to allocate a nodePort: %v", err))})
		}
		done.ports = append(done.ports, o)
		p.NodePort = int32(nodePortBase + o)
	}
	// A Service that becomes a LoadBalancer with policy Local gets its health-check node port now;
	// one that keeps needing it keeps the one it has (validation refuses a change).
	if core.NeedsHealthCheck(svc) && !core.NeedsHealthCheck(old) {
		if err := a.allocateHealthCheckNodePort(ctx, svc, done, dryRun); err != nil {
			if !dryRun {
				a.rollback(ctx, done)
			}
			return nil, err
		}
	}
	return done, nil
}
