package apiserver

import (
	"context"
	"fmt"

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
