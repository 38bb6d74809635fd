package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "nodeipam"

// Allocator hands out subnets of one cluster CIDR. It is pure bookkeeping.
type Allocator struct {
	base     *big.Int
	bits     int // 32 or 128
	maskSize int
	count    int64
}

// NewAllocator splits clusterCIDR into subnets of maskSize bits.
func NewAllocator(clusterCIDR string, maskSize int) (*Allocator, error) {
	_, cidr, err := net.ParseCIDR(clusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("cluster CIDR %q: %w", clusterCIDR, err)
	}
	ones, bits := cidr.Mask.Size()
	if maskSize < ones || maskSize > bits {
		return nil, fmt.Errorf("node CIDR mask size %d must be between %d and %d for %s", maskSize, ones, bits, clusterCIDR)
	}
	if maskSize-ones > 30 {
		return nil, fmt.Errorf("node CIDR mask size %d leaves too many subnets in %s", maskSize, clusterCIDR)
	}
	ip := cidr.IP
	if bits == 32 {
		ip = ip.To4()
	}
	return &Allocator{base: new(big.Int).SetBytes(ip), bits: bits, maskSize: maskSize, count: int64(1) << (maskSize - ones)}, nil
}

// Subnet returns the i-th subnet.
func (a *Allocator) Subnet(i int64) string {
	offset := new(big.Int).Lsh(big.NewInt(i), uint(a.bits-a.maskSize))
	v := new(big.Int).Add(a.base, offset).Bytes()
	ip := make(net.IP, a.bits/8)
	copy(ip[len(ip)-len(v):], v)
	return (&net.IPNet{IP: ip, Mask: net.CIDRMask(a.maskSize, a.bits)}).String()
}

// Next returns the lowest subnet not in used, or false when all are taken.
func (a *Allocator) Next(used map[string]bool) (string, bool) {
	for i := int64(0); i < a.count; i++ {
		if s := a.Subnet(i); !used[s] {
			return s, true
		}
	}
	return "", false
}

// Controller assigns pod CIDRs to nodes.
type Controller struct {
	client    kubernetes.Interface
	lister    corelisters.NodeLister
	recorder  record.EventRecorder
	allocator *Allocator
	loop      *ctrlutil.Loop
	synced    cache.InformerSynced

	mu      sync.Mutex
	pending map[string]string // node -> subnet assigned but not yet seen in the cache
}

// New builds the controller for clusterCIDR split into maskSize-bit subnets.
func New(deps ctrlutil.Deps, clusterCIDR string, maskSize int) (*Controller, error) {
	alloc, err := NewAllocator(clusterCIDR, maskSize)
	if err != nil {
		return nil, err
	}
	inf := deps.Informers.Core().V1().Nodes()
	c := &Controller{client: deps.Client, lister: inf.Lister(), recorder: deps.Recorder, allocator: alloc,
		synced: inf.Informer().HasSynced, pending: map[string]string{}}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.loop.Enqueue, UpdateFunc: func(_, o any) { c.loop.Enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("node informer handler: %w", err)
	}
	return c, nil
}

// Run runs until ctx is done. One worker: allocation must be serial.
func (c *Controller) Run(ctx context.Context, _ int) { c.loop.Run(ctx, 1, c.synced) }

// Sync gives the node its pod CIDR if it has none.
func (c *Controller) Sync(ctx context.Context, name string) error {
	node, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.pending, name)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if node.Spec.PodCIDR != "" {
		delete(c.pending, name)
		return nil
	}
	if subnet, ok := c.pending[name]; ok {
		return c.assign(ctx, node, subnet) // retry the same subnet: idempotent
	}
	nodes, err := c.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	used := map[string]bool{}
	for _, n := range nodes {
		for _, cidr := range append([]string{n.Spec.PodCIDR}, n.Spec.PodCIDRs...) {
			if cidr != "" {
				used[cidr] = true
			}
		}
	}
	for _, s := range c.pending {
		used[s] = true
	}
	subnet, ok := c.allocator.Next(used)
	if !ok {
		c.recorder.Eventf(node, corev1.EventTypeNormal, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", name)
		return fmt.Errorf("no pod CIDR left for node %s", name)
	}
	c.pending[name] = subnet
	return c.assign(ctx, node, subnet)
}

func (c *Controller) assign(ctx context.Context, node *corev1.Node, subnet string) error {
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": subnet, "podCIDRs": []string{subnet}}})
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		c.recorder.Eventf(node, corev1.EventTypeWarning, "CIDRAssignmentFailed", "Node %s status is now: CIDRAssignmentFailed", node.Name)
		return fmt.Errorf("assign pod CIDR %s to node %s: %w", subnet, node.Name, err)
	}
	return nil
}
