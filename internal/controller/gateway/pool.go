package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/skiff-sh/skiff/internal/cloudprovider/local"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/ingress"
)

// PoolKey is the key of a class's parameters ConfigMap that holds its address pool.
const PoolKey = "addresses"

// AddressPool is the addresses a GatewayClass gives its Gateways, one each, as MetalLB or a
// cloud load balancer gives each its own IP. Without a pool every Gateway is served on the
// data-plane nodes' addresses, so Gateways with listeners on one port share it.
type AddressPool struct {
	ranges []addressRange
}

type addressRange struct{ first, last netip.Addr }

// ParsePool reads a pool: comma- or newline-separated CIDRs ("10.0.0.64/27": its network and
// broadcast addresses left out when it is an IPv4 prefix of 30 bits or fewer), first-last ranges
// ("10.0.0.200-10.0.0.250") and single addresses. IPv4 only: the data plane's addresses are.
func ParsePool(s string) (*AddressPool, error) {
	p := &AddressPool{}
	for field := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ',' || r == '\n' || r == ' ' || r == '\t' }) {
		r, err := parseRange(field)
		if err != nil {
			return nil, err
		}
		p.ranges = append(p.ranges, r)
	}
	if len(p.ranges) == 0 {
		return nil, errors.New("no addresses")
	}
	return p, nil
}

func parseRange(s string) (addressRange, error) {
	var r addressRange
	switch {
	case strings.Contains(s, "/"):
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			return r, fmt.Errorf("%q: %w", s, err)
		}
		prefix = prefix.Masked()
		r.first = prefix.Addr()
		r.last = lastOf(prefix)
		if r.first.Is4() && prefix.Bits() <= 30 {
			r.first, r.last = r.first.Next(), r.last.Prev()
		}
	case strings.Contains(s, "-"):
		from, to, _ := strings.Cut(s, "-")
		var err1, err2 error
		r.first, err1 = netip.ParseAddr(strings.TrimSpace(from))
		r.last, err2 = netip.ParseAddr(strings.TrimSpace(to))
		if err := errors.Join(err1, err2); err != nil {
			return r, fmt.Errorf("%q: %w", s, err)
		}
		if r.last.Less(r.first) {
			return r, fmt.Errorf("%q: the range ends before it starts", s)
		}
	default:
		a, err := netip.ParseAddr(s)
		if err != nil {
			return r, fmt.Errorf("%q: %w", s, err)
		}
		r.first, r.last = a, a
	}
	if !r.first.Is4() || !r.last.Is4() {
		return r, fmt.Errorf("%q: only IPv4 addresses are served", s)
	}
	return r, nil
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	return netip.AddrFrom4(b)
}

// Contains says whether a is in the pool.
func (p *AddressPool) Contains(a netip.Addr) bool {
	return slices.ContainsFunc(p.ranges, func(r addressRange) bool { return !a.Less(r.first) && !r.last.Less(a) })
}

// next is the pool's lowest address not in used.
func (p *AddressPool) next(used map[netip.Addr]types.NamespacedName) (netip.Addr, bool) {
	for _, r := range p.ranges {
		for a := r.first; a.IsValid() && !r.last.Less(a); a = a.Next() {
			if _, taken := used[a]; !taken {
				return a, true
			}
		}
	}
	return netip.Addr{}, false
}

// PoolState is what a class's parametersRef gives its Gateways.
type PoolState struct {
	// Pool is the class's pool, allocated from (the controller's decision).
	Pool *AddressPool
	// Follow: the class has a pool this reader cannot see (a node's data plane, which does not
	// read ConfigMaps), so each Gateway's address is the one the controller wrote in its status.
	Follow bool
	// Err says why the parameters are invalid: the class is not accepted (InvalidParameters)
	// and its Gateways get no address.
	Err error
}

// ClassPools are the pools of skiff's classes with a parametersRef, read through configMap (the
// controller's view: a lookup by key, nil when absent; the cluster's ConfigMaps are many, the
// classes' few).
func ClassPools(classes []*gatewayv1.GatewayClass, configMap func(key types.NamespacedName) *corev1.ConfigMap) map[string]PoolState {
	out := map[string]PoolState{}
	for _, gc := range classes {
		ref := gc.Spec.ParametersRef
		if gc.Spec.ControllerName != ControllerName || ref == nil {
			continue
		}
		if ref.Group != "" || ref.Kind != "ConfigMap" || ref.Namespace == nil {
			out[gc.Name] = PoolState{Err: fmt.Errorf("parametersRef %s/%s %s: skiff reads a core ConfigMap with its namespace set", ref.Group, ref.Kind, ref.Name)}
			continue
		}
		cm := configMap(nn(string(*ref.Namespace), ref.Name))
		if cm == nil {
			out[gc.Name] = PoolState{Err: fmt.Errorf("ConfigMap %s/%s not found", *ref.Namespace, ref.Name)}
			continue
		}
		pool, err := ParsePool(cm.Data[PoolKey])
		if err != nil {
			out[gc.Name] = PoolState{Err: fmt.Errorf("ConfigMap %s/%s key %s: %w", *ref.Namespace, ref.Name, PoolKey, err)}
			continue
		}
		out[gc.Name] = PoolState{Pool: pool}
	}
	return out
}

// ReferencesConfigMap reports whether one of skiff's classes reads its pool from the ConfigMap
// key: only such a ConfigMap's change can change a decision (every other ConfigMap's write is no
// reason for a reconcile).
func ReferencesConfigMap(classes []*gatewayv1.GatewayClass, key types.NamespacedName) bool {
	for _, gc := range classes {
		ref := gc.Spec.ParametersRef
		if gc.Spec.ControllerName == ControllerName && ref != nil && ref.Namespace != nil &&
			nn(string(*ref.Namespace), ref.Name) == key {
			return true
		}
	}
	return false
}

// FollowedPools is the node's view of the same classes: a class with a parametersRef has a pool,
// and its Gateways' addresses are those the controller wrote.
func FollowedPools(classes []*gatewayv1.GatewayClass) map[string]PoolState {
	out := map[string]PoolState{}
	for _, gc := range classes {
		if gc.Spec.ControllerName == ControllerName && gc.Spec.ParametersRef != nil {
			out[gc.Name] = PoolState{Follow: true}
		}
	}
	return out
}

// poolAddress is a Gateway's own addresses, or why it has none.
type poolAddress struct {
	addrs []netip.Addr
	// unsupported: spec.addresses asks for what skiff cannot give (the Gateway is not
	// accepted); otherwise an error leaves it unprogrammed (AddressNotUsable or
	// AddressNotAssigned, by reason).
	unsupported bool
	reason      string
	err         error
}

// assignAddresses gives each Gateway of a class with a pool its addresses: those its
// spec.addresses name when the pool has them free (an entry without a value asks for any
// address), else one; an address asked for by value is taken first, then those the status
// holds when still the pool's and free (so an address outlives restarts and reorderings), then
// the pool's lowest free ones. Older Gateways choose first.
func assignAddresses(pools map[string]PoolState, gateways []*gatewayv1.Gateway) map[types.NamespacedName]poolAddress {
	out := map[types.NamespacedName]poolAddress{}
	byClass := map[string][]*gatewayv1.Gateway{}
	for _, gw := range gateways {
		if _, ok := pools[string(gw.Spec.GatewayClassName)]; ok {
			byClass[string(gw.Spec.GatewayClassName)] = append(byClass[string(gw.Spec.GatewayClassName)], gw)
		}
	}
	for class, gws := range byClass {
		st := pools[class]
		slices.SortFunc(gws, func(a, b *gatewayv1.Gateway) int {
			return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		switch {
		case st.Err != nil:
			for _, gw := range gws {
				out[nn(gw.Namespace, gw.Name)] = poolAddress{reason: string(gatewayv1.GatewayReasonAddressNotAssigned), err: fmt.Errorf("GatewayClass %s: %w", class, st.Err)}
			}
		case st.Follow:
			for _, gw := range gws {
				out[nn(gw.Namespace, gw.Name)] = followed(gw)
			}
		default:
			allocate(st.Pool, class, gws, out)
		}
	}
	return out
}

// statusAddresses are the IP addresses a Gateway's status holds.
func statusAddresses(gw *gatewayv1.Gateway) []netip.Addr {
	var out []netip.Addr
	for _, a := range gw.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Value); err == nil && (a.Type == nil || *a.Type == gatewayv1.IPAddressType) {
			out = append(out, ip)
		}
	}
	return out
}

// followed is what the controller wrote in a Gateway's status.
func followed(gw *gatewayv1.Gateway) poolAddress {
	if a := statusAddresses(gw); len(a) > 0 {
		return poolAddress{addrs: a}
	}
	return poolAddress{reason: string(gatewayv1.GatewayReasonAddressNotAssigned), err: errors.New("no address assigned yet")}
}

// demand is what a Gateway asks of the pool: addresses by value, and how many more of any.
type demand struct {
	gw       *gatewayv1.Gateway
	explicit []netip.Addr
	any      int
	got      []netip.Addr
}

// allocate is assignAddresses for one class with a pool; gws are in age order.
func allocate(pool *AddressPool, class string, gws []*gatewayv1.Gateway, out map[types.NamespacedName]poolAddress) {
	used := map[netip.Addr]types.NamespacedName{}
	var ds []*demand
	// Addresses asked for by value first: an older Gateway's request wins.
	for _, gw := range gws {
		d, refused := demandOf(pool, gw, used)
		if refused != nil {
			out[nn(gw.Namespace, gw.Name)] = *refused
			continue
		}
		for _, a := range d.explicit {
			used[a] = nn(gw.Namespace, gw.Name)
		}
		d.got = slices.Clone(d.explicit)
		ds = append(ds, d)
	}
	// Then the addresses the status holds, for the Gateways that ask for any.
	for _, d := range ds {
		for _, a := range statusAddresses(d.gw) {
			if _, taken := used[a]; d.any > 0 && !taken && pool.Contains(a) {
				used[a] = nn(d.gw.Namespace, d.gw.Name)
				d.got, d.any = append(d.got, a), d.any-1
			}
		}
	}
	for _, d := range ds {
		key := nn(d.gw.Namespace, d.gw.Name)
		for ; d.any > 0; d.any-- {
			a, ok := pool.next(used)
			if !ok {
				break
			}
			used[a] = key
			d.got = append(d.got, a)
		}
		if d.any > 0 {
			out[key] = poolAddress{reason: string(gatewayv1.GatewayReasonAddressNotAssigned), err: fmt.Errorf("the address pool of GatewayClass %s has no free address", class)}
			continue
		}
		slices.SortFunc(d.got, netip.Addr.Compare)
		out[key] = poolAddress{addrs: d.got}
	}
}

// demandOf reads a Gateway's spec.addresses: IPAddress entries of the pool, not another's, or
// without a value (any address); none asks for one address. It refuses (the second result) the
// Gateway whose addresses cannot be given: another type (unsupported), one outside the pool or
// another Gateway's (not usable).
func demandOf(pool *AddressPool, gw *gatewayv1.Gateway, used map[netip.Addr]types.NamespacedName) (*demand, *poolAddress) {
	d := &demand{gw: gw}
	if len(gw.Spec.Addresses) == 0 {
		d.any = 1
		return d, nil
	}
	for _, sa := range gw.Spec.Addresses {
		if sa.Type != nil && *sa.Type != gatewayv1.IPAddressType {
			return nil, &poolAddress{unsupported: true, reason: string(gatewayv1.GatewayReasonUnsupportedAddress), err: fmt.Errorf("address type %s is not supported: only IPAddress", *sa.Type)}
		}
	}
	for _, sa := range gw.Spec.Addresses {
		if sa.Value == "" {
			d.any++
			continue
		}
		a, err := netip.ParseAddr(sa.Value)
		if err != nil || !pool.Contains(a) {
			return nil, &poolAddress{reason: string(gatewayv1.GatewayReasonAddressNotUsable), err: fmt.Errorf("address %s is not in the address pool of GatewayClass %s", sa.Value, gw.Spec.GatewayClassName)}
		}
		if other, taken := used[a]; taken || slices.Contains(d.explicit, a) {
			return nil, &poolAddress{reason: string(gatewayv1.GatewayReasonAddressNotUsable), err: fmt.Errorf("address %s is Gateway %s's", a, other)}
		}
		d.explicit = append(d.explicit, a)
	}
	return d, nil
}

// Holder is the node that holds a Gateway's own address among nodes: the eligible node with
// the highest hash of its name and the address (rendezvous hashing, as MetalLB's layer-2 mode
// elects a speaker). Every node computes the same answer from the same Node objects, so no
// record of it is kept; when the holder goes away only its addresses move. Eligible: Ready, not
// being deleted, running the data plane (ingress.NodeLabel) and not excluded from load
// balancers (local.ExcludeLabel). "" when no node is.
func Holder(address string, nodes []*corev1.Node) string {
	var best string
	var bestHash uint64
	for _, n := range nodes {
		if !eligibleHolder(n) {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(n.Name))
		h.Write([]byte{0})
		h.Write([]byte(address))
		if v := mix(h.Sum64()); best == "" || v > bestHash || (v == bestHash && n.Name < best) {
			best, bestHash = n.Name, v
		}
	}
	return best
}

// mix is splitmix64's finalizer: FNV's high bits barely change with the last bytes hashed, and
// the election compares whole values, so names that differ in one letter need the avalanche.
func mix(v uint64) uint64 {
	v ^= v >> 30
	v *= 0xbf58476d1ce4e5b9
	v ^= v >> 27
	v *= 0x94d049bb133111eb
	return v ^ v>>31
}

func eligibleHolder(n *corev1.Node) bool {
	if n.DeletionTimestamp != nil || n.Labels[ingress.NodeLabel] != "true" {
		return false
	}
	if _, excluded := n.Labels[local.ExcludeLabel]; excluded {
		return false
	}
	return ctrlutil.IsNodeReady(n)
}
