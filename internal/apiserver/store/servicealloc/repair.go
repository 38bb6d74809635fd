package servicealloc

import (
	"context"
	"fmt"
	"math/big"
	"net"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/registry/core"
)

// RepairPasses is how many passes in a row must find an offset set in a bitmap that no Service
// holds before a repair releases it, as Kubernetes' repair controllers wait: an allocation whose
// Service is still being written looks the same for a moment.
const RepairPasses = 3

// Held is what the Services hold of the allocator's ranges: offsets of cluster IPs in the own
// range and of node ports (health-check node ports included).
type Held struct {
	IPs, NodePorts map[int]bool
}

// HeldBy computes what services hold of the allocator's ranges. It is pure.
func (a *Allocator) HeldBy(services []*corev1.Service) Held {
	h := Held{IPs: map[int]bool{}, NodePorts: map[int]bool{}}
	for _, svc := range services {
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		for _, s := range ips {
			if o, ok := a.ipOffset(net.ParseIP(s)); ok {
				h.IPs[o] = true
			}
		}
		var ports []int32
		if wantsNodePorts(svc.Spec.Type) {
			for _, p := range svc.Spec.Ports {
				ports = append(ports, p.NodePort)
			}
		}
		if core.NeedsHealthCheck(svc) {
			ports = append(ports, svc.Spec.HealthCheckNodePort)
		}
		for _, p := range ports {
			if p >= nodePortBase && p < nodePortBase+nodePortSize {
				h.NodePorts[int(p)-nodePortBase] = true
			}
		}
	}
	return h
}

// RepairPlan is one repair pass over one bitmap: the offsets to set (a Service holds them, the
// bitmap lost them), those to release (set for RepairPasses passes in a row with no Service
// holding them), and the leak counts to carry to the next pass.
type RepairPlan struct {
	Set, Release []int
	Leaks        map[int]int
}

// PlanRepair decides one pass: set is the bitmap's offsets, held the Services', leaks the counts
// of the previous pass. It is pure.
func PlanRepair(set, held map[int]bool, leaks map[int]int) RepairPlan {
	p := RepairPlan{Leaks: map[int]int{}}
	for o := range held {
		if !set[o] {
			p.Set = append(p.Set, o)
		}
	}
	for o := range set {
		if held[o] {
			continue
		}
		n := leaks[o] + 1
		if n >= RepairPasses {
			p.Release = append(p.Release, o)
			continue
		}
		p.Leaks[o] = n
	}
	sort.Ints(p.Set)
	sort.Ints(p.Release)
	return p
}

// Repairer repairs the allocator's bitmaps against the Services, pass after pass (Kubernetes'
// service IP and node port repair controllers): an allocation whose Service never got written (the
// API server stopped between the two) is released, and one a Service holds but the bitmap lost is
// set again. Not safe for concurrent passes: one goroutine runs them.
type Repairer struct {
	a                  *Allocator
	ipLeaks, portLeaks map[int]int
}

// NewRepairer starts with no leak seen yet.
func (a *Allocator) NewRepairer() *Repairer {
	return &Repairer{a: a, ipLeaks: map[int]int{}, portLeaks: map[int]int{}}
}

// Pass runs one repair pass against services (every Service of the cluster, read after the
// bitmaps would have been written for them) and reports how many offsets it released and set.
func (r *Repairer) Pass(ctx context.Context, services []*corev1.Service) (released, set int, err error) {
	held := r.a.HeldBy(services)
	for _, b := range []struct {
		bits  *bitmapRange
		held  map[int]bool
		leaks *map[int]int
	}{{r.a.ips, held.IPs, &r.ipLeaks}, {r.a.nodePorts, held.NodePorts, &r.portLeaks}} {
		var plan RepairPlan
		err := b.bits.store.GuaranteedUpdate(ctx, b.bits.key, &corev1.RangeAllocation{}, true, nil, func(current runtime.Object) (runtime.Object, error) {
			ra := current.DeepCopyObject().(*corev1.RangeAllocation)
			bits := new(big.Int).SetBytes(ra.Data)
			set := map[int]bool{}
			for i := 0; i < bits.BitLen(); i++ {
				if bits.Bit(i) == 1 {
					set[i] = true
				}
			}
			plan = PlanRepair(set, b.held, *b.leaks)
			for _, o := range plan.Set {
				bits.SetBit(bits, o, 1)
			}
			for _, o := range plan.Release {
				bits.SetBit(bits, o, 0)
			}
			ra.Range, ra.Data = b.bits.desc, bits.Bytes()
			return ra, nil
		})
		if err != nil {
			return released, set, fmt.Errorf("repair %s: %w", b.bits.desc, err)
		}
		*b.leaks = plan.Leaks
		released += len(plan.Release)
		set += len(plan.Set)
	}
	return released, set, nil
}
