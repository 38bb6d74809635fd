package servicecidrs

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "service-cidr-controller"

// Finalizer keeps a ServiceCIDR while cluster IPs only it covers are held.
const Finalizer = "networking.k8s.io/service-cidr-finalizer"

// DeletionGracePeriod is how long after its deletion began a ServiceCIDR keeps its finalizer even
// when nothing holds its addresses: every API server's allocator must have seen the deletion, or
// one could still hand out an address of a range that is going.
const DeletionGracePeriod = 10 * time.Second

// Kubernetes' words for the Ready condition.
const (
	readyReason        = "ServiceCIDRReady"
	readyMessage       = "Kubernetes Service CIDR is ready"
	terminatingMessage = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
)

// Plan is what one reconcile of a ServiceCIDR does.
type Plan struct {
	AddFinalizer    bool
	RemoveFinalizer bool
	// Ready, when set, is the Ready condition to write (its transition time is the writer's).
	Ready *metav1.Condition
	// RequeueAfter, when positive, looks again then (the grace period runs).
	RequeueAfter time.Duration
}

// Decide plans the reconcile of cidr, given the other ServiceCIDRs, the cluster IPs held (IPAddress
// objects and Services' clusterIPs) and the time. It is pure.
func Decide(cidr *networkingv1.ServiceCIDR, others []*networkingv1.ServiceCIDR, held []netip.Addr, now time.Time) Plan {
	has := slices.Contains(cidr.Finalizers, Finalizer)
	if cidr.DeletionTimestamp == nil {
		p := Plan{AddFinalizer: !has}
		if !apimeta.IsStatusConditionTrue(cidr.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
			p.Ready = &metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue, Reason: readyReason, Message: readyMessage}
		}
		return p
	}
	if !has {
		return Plan{}
	}
	if Stranded(cidr, others, held) {
		want := metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionFalse,
			Reason: networkingv1.ServiceCIDRReasonTerminating, Message: terminatingMessage}
		if cur := apimeta.FindStatusCondition(cidr.Status.Conditions, want.Type); cur != nil &&
			cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
			return Plan{}
		}
		return Plan{Ready: &want}
	}
	if left := DeletionGracePeriod - now.Sub(cidr.DeletionTimestamp.Time); left > 0 {
		return Plan{RequeueAfter: left}
	}
	return Plan{RemoveFinalizer: true}
}

// Stranded says whether a held cluster IP lies in cidr and in no other ServiceCIDR that is not
// being deleted: deleting cidr would leave it outside every range. It is pure.
func Stranded(cidr *networkingv1.ServiceCIDR, others []*networkingv1.ServiceCIDR, held []netip.Addr) bool {
	mine := prefixes(cidr)
	var covering []netip.Prefix
	for _, o := range others {
		if o.Name != cidr.Name && o.DeletionTimestamp == nil {
			covering = append(covering, prefixes(o)...)
		}
	}
	for _, ip := range held {
		if !containedIn(mine, ip) {
			continue
		}
		if !containedIn(covering, ip) {
			return true
		}
	}
	return false
}

func prefixes(c *networkingv1.ServiceCIDR) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range c.Spec.CIDRs {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

func containedIn(ps []netip.Prefix, ip netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Controller keeps the ServiceCIDRs' finalizer and Ready condition.
type Controller struct {
	client   kubernetes.Interface
	cidrs    networkinglisters.ServiceCIDRLister
	addrs    networkinglisters.IPAddressLister
	services corelisters.ServiceLister
	clock    clock.Clock
	loop     *ctrlutil.Loop
	synced   []cache.InformerSynced
	log      *slog.Logger
}

// New builds the controller and registers its informer handlers: a ServiceCIDR is looked at when
// it changes; those being deleted are looked at again when another ServiceCIDR, an IPAddress or a
// Service changes or goes (what held them may have gone).
func New(deps ctrlutil.Deps) (*Controller, error) {
	cidrs := deps.Informers.Networking().V1().ServiceCIDRs()
	addrs := deps.Informers.Networking().V1().IPAddresses()
	svcs := deps.Informers.Core().V1().Services()
	c := &Controller{
		client: deps.Client, cidrs: cidrs.Lister(), addrs: addrs.Lister(), services: svcs.Lister(), clock: deps.Clock, log: deps.Log(),
		synced: []cache.InformerSynced{cidrs.Informer().HasSynced, addrs.Informer().HasSynced, svcs.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if _, err := cidrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.loop.Enqueue,
		UpdateFunc: func(_, o any) { c.loop.Enqueue(o); c.enqueueDeleting() },
		DeleteFunc: func(any) { c.enqueueDeleting() },
	}); err != nil {
		return nil, fmt.Errorf("service CIDR informer handler: %w", err)
	}
	for name, inf := range map[string]cache.SharedIndexInformer{"IP address": addrs.Informer(), "service": svcs.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(any, any) { c.enqueueDeleting() }, DeleteFunc: func(any) { c.enqueueDeleting() },
		}); err != nil {
			return nil, fmt.Errorf("%s informer handler: %w", name, err)
		}
	}
	return c, nil
}

// enqueueDeleting queues every ServiceCIDR being deleted.
func (c *Controller) enqueueDeleting() {
	all, err := c.cidrs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, sc := range all {
		if sc.DeletionTimestamp != nil {
			c.loop.Queue.Add(sc.Name)
		}
	}
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// Sync carries out Decide's plan for the ServiceCIDR named key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	sc, err := c.cidrs.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get service CIDR %s: %w", key, err)
	}
	others, err := c.cidrs.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list service CIDRs: %w", err)
	}
	var held []netip.Addr
	if sc.DeletionTimestamp != nil {
		if held, err = c.heldIPs(); err != nil {
			return err
		}
	}
	plan := Decide(sc, others, held, c.clock.Now())
	if plan.RequeueAfter > 0 {
		c.loop.EnqueueAfter(key, plan.RequeueAfter)
	}
	return c.carryOut(ctx, sc, plan)
}

// carryOut writes plan's finalizer and status changes to sc.
func (c *Controller) carryOut(ctx context.Context, sc *networkingv1.ServiceCIDR, plan Plan) error {
	api := c.client.NetworkingV1().ServiceCIDRs()
	if plan.AddFinalizer || plan.RemoveFinalizer {
		next := sc.DeepCopy()
		if plan.AddFinalizer {
			next.Finalizers = append(next.Finalizers, Finalizer)
		} else {
			next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == Finalizer })
		}
		updated, err := api.Update(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("finalizer of service CIDR %s: %w", sc.Name, err)
		}
		if plan.RemoveFinalizer {
			c.log.Info("no cluster IP depends on the service CIDR any more; removed its finalizer", "serviceCIDR", sc.Name)
		}
		sc = updated
	}
	if plan.Ready == nil {
		return nil
	}
	next := sc.DeepCopy()
	cond := *plan.Ready
	cond.LastTransitionTime = metav1.NewTime(c.clock.Now())
	apimeta.SetStatusCondition(&next.Status.Conditions, cond)
	if _, err := api.UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("status of service CIDR %s: %w", sc.Name, err)
	}
	return nil
}

// heldIPs is every cluster IP in use: the IPAddress objects' and the Services' (skiff's allocator
// keeps the --service-cidr range's addresses in a bitmap, without IPAddress objects).
func (c *Controller) heldIPs() ([]netip.Addr, error) {
	addrs, err := c.addrs.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list IP addresses: %w", err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		if ip, err := netip.ParseAddr(a.Name); err == nil {
			out = append(out, ip)
		}
	}
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	for _, s := range svcs {
		for _, v := range ClusterIPsOf(s) {
			if ip, err := netip.ParseAddr(v); err == nil {
				out = append(out, ip)
			}
		}
	}
	return out, nil
}

// ClusterIPsOf is a Service's cluster IPs (clusterIPs, else clusterIP; none for headless). It is
// pure.
func ClusterIPsOf(s *corev1.Service) []string {
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 && s.Spec.ClusterIP != "" {
		ips = []string{s.Spec.ClusterIP}
	}
	return slices.DeleteFunc(slices.Clone(ips), func(v string) bool { return v == corev1.ClusterIPNone })
}
