package netpol

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
)

// addrRange is an inclusive range of IPv4 addresses.
type addrRange struct{ lo, hi netip.Addr }

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func fromU32(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// prefixRange is the range a prefix covers.
func prefixRange(p netip.Prefix) addrRange {
	p = p.Masked()
	lo := u32(p.Addr())
	hi := lo | (^uint32(0) >> p.Bits())
	if p.Bits() == 0 {
		hi = ^uint32(0)
	}
	return addrRange{p.Addr(), fromU32(hi)}
}

// ipBlockRanges are the IPv4 ranges of an ipBlock: its CIDR minus every except. An IPv6 or
// unparsable block allows no IPv4 address (the API validates CIDRs; the pod network is IPv4).
func ipBlockRanges(b *networkingv1.IPBlock) []addrRange {
	p, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !p.Addr().Is4() {
		return nil
	}
	out := []addrRange{prefixRange(p)}
	for _, e := range b.Except {
		ep, err := netip.ParsePrefix(e)
		if err != nil || !ep.Addr().Is4() {
			continue
		}
		out = subtract(out, prefixRange(ep))
	}
	return out
}

// subtract removes cut from every range of rs.
func subtract(rs []addrRange, cut addrRange) []addrRange {
	var out []addrRange
	clo, chi := u32(cut.lo), u32(cut.hi)
	for _, r := range rs {
		lo, hi := u32(r.lo), u32(r.hi)
		if chi < lo || clo > hi {
			out = append(out, r)
			continue
		}
		if clo > lo {
			out = append(out, addrRange{r.lo, fromU32(clo - 1)})
		}
		if chi < hi {
			out = append(out, addrRange{fromU32(chi + 1), r.hi})
		}
	}
	return out
}

// mergeRanges sorts rs and joins ranges that overlap or touch: nft refuses overlapping elements
// in an interval set, and one canonical form keeps element diffs small.
func mergeRanges(rs []addrRange) []addrRange {
	if len(rs) == 0 {
		return nil
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b addrRange) int { return a.lo.Compare(b.lo) })
	out := []addrRange{rs[0]}
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if u32(last.hi) == ^uint32(0) || u32(r.lo) <= u32(last.hi)+1 {
			if r.hi.Compare(last.hi) > 0 {
				last.hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// rangesContain reports whether a is in one of rs, which are merged (sorted, disjoint).
func rangesContain(rs []addrRange, a netip.Addr) bool {
	i, _ := slices.BinarySearchFunc(rs, a, func(r addrRange, a netip.Addr) int {
		if r.hi.Compare(a) < 0 {
			return -1
		}
		return 0
	})
	return i < len(rs) && rs[i].lo.Compare(a) <= 0
}

// intervalElements writes merged ranges as nft elements: an address, a prefix when the range is
// exactly one, else lo-hi.
func intervalElements(rs []addrRange) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		lo, hi := u32(r.lo), u32(r.hi)
		switch {
		case lo == hi:
			out = append(out, r.lo.String())
		case isPrefix(lo, hi):
			out = append(out, fmt.Sprintf("%s/%d", r.lo, 32-bits.Len32(hi-lo)))
		default:
			out = append(out, fmt.Sprintf("%s-%s", r.lo, r.hi))
		}
	}
	return out
}

// isPrefix reports whether [lo, hi] is exactly one CIDR block.
func isPrefix(lo, hi uint32) bool {
	size := hi - lo // one less than the count; the whole space overflows to 0 when added to
	return (size+1)&size == 0 && lo&size == 0
}
