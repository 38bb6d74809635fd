package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/apiserver/store/servicealloc"
	"github.com/skiff-sh/skiff/internal/storage"
)

var (
	serviceCIDRsResource = schema.GroupResource{Group: networkingv1.GroupName, Resource: "servicecidrs"}
	ipAddressesResource  = schema.GroupResource{Group: networkingv1.GroupName, Resource: "ipaddresses"}
)

// extraServiceRanges is the service allocator's view of the ServiceCIDRs and IPAddresses
// (servicealloc.ExtraRanges), on the server's own stores: the allocator's writes are the API
// server's own, with no admission, as its bitmaps are.
type extraServiceRanges struct{ s *Server }

var _ servicealloc.ExtraRanges = extraServiceRanges{}

func (x extraServiceRanges) ServiceCIDRs(ctx context.Context) ([]*networkingv1.ServiceCIDR, error) {
	h := x.s.handlerForGroupResource(serviceCIDRsResource)
	if h == nil {
		return nil, nil
	}
	obj, err := h.st.List(ctx, "", storage.ListOptions{Recursive: true})
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*networkingv1.ServiceCIDRList)
	if !ok {
		return nil, fmt.Errorf("list servicecidrs: got %T", obj)
	}
	out := make([]*networkingv1.ServiceCIDR, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (x extraServiceRanges) IPAddresses(ctx context.Context) ([]*networkingv1.IPAddress, error) {
	h := x.s.handlerForGroupResource(ipAddressesResource)
	if h == nil {
		return nil, nil
	}
	obj, err := h.st.List(ctx, "", storage.ListOptions{Recursive: true})
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*networkingv1.IPAddressList)
	if !ok {
		return nil, fmt.Errorf("list ipaddresses: got %T", obj)
	}
	out := make([]*networkingv1.IPAddress, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (x extraServiceRanges) CreateIPAddress(ctx context.Context, ip *networkingv1.IPAddress, dryRun bool) error {
	h := x.s.handlerForGroupResource(ipAddressesResource)
	if h == nil {
		return apierrors.NewNotFound(ipAddressesResource, ip.Name)
	}
	_, err := h.st.Create(ctx, ip, store.CreateOptions{DryRun: dryRun})
	return err
}

func (x extraServiceRanges) DeleteIPAddress(ctx context.Context, name string) error {
	h := x.s.handlerForGroupResource(ipAddressesResource)
	if h == nil {
		return nil
	}
	_, _, err := h.st.Delete(ctx, "", name, &metav1.DeleteOptions{}, nil)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// serviceRepairRetry is how soon a failed first repair pass is tried again: the health endpoints
// report the repair step unfinished until one passed.
const serviceRepairRetry = time.Second

// RunServiceRepair repairs the service allocator's bitmaps against the Services every period until
// ctx ends (servicealloc.Repairer: leaked cluster IPs and node ports go back, lost ones are set
// again), as Kubernetes' repair controllers do; the first pass that succeeds finishes the
// start-service-ip-repair-controllers step.
func (s *Server) RunServiceRepair(ctx context.Context, period time.Duration) {
	if s.services == nil {
		s.StartStepDone(StepServiceIPRepair)
		return
	}
	r := s.services.NewRepairer()
	first := true
	for {
		wait := period
		released, set, err := s.repairPass(ctx, r)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			s.log.Warn("service allocation repair", "err", err)
			if first {
				wait = serviceRepairRetry
			}
		default:
			if first {
				s.StartStepDone(StepServiceIPRepair)
				first = false
			}
			if released+set > 0 {
				s.log.Info("service allocations repaired", "released", released, "set", set)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// repairPass reads every Service (a fresh read, before the pass reads the bitmaps) and repairs.
func (s *Server) repairPass(ctx context.Context, r *servicealloc.Repairer) (released, set int, err error) {
	h := s.handlerForGroupResource(schema.GroupResource{Resource: "services"})
	if h == nil {
		return 0, 0, nil
	}
	obj, err := h.st.List(ctx, "", storage.ListOptions{Recursive: true})
	if err != nil {
		return 0, 0, fmt.Errorf("list services: %w", err)
	}
	list, ok := obj.(*corev1.ServiceList)
	if !ok {
		return 0, 0, fmt.Errorf("list services: got %T", obj)
	}
	services := make([]*corev1.Service, len(list.Items))
	for i := range list.Items {
		services[i] = &list.Items[i]
	}
	return r.Pass(ctx, services)
}
