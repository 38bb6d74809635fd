package lb

import (
	"context"
	"fmt"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// WatchEndpoints follows the "kubernetes" EndpointSlices in default through client (which should
// reach the cluster through the balancer itself) and hands every change of the API server list to
// b, until ctx ends.
func (b *Balancer) WatchEndpoints(ctx context.Context, client kubernetes.Interface) error {
	selector := labels.Set{discoveryv1.LabelServiceName: "kubernetes"}.AsSelector().String()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(metav1.NamespaceDefault),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := factory.Discovery().V1().EndpointSlices()
	lister := inf.Lister()
	var last []string
	update := func() {
		list, err := lister.EndpointSlices(metav1.NamespaceDefault).List(labels.Everything())
		if err != nil {
			return
		}
		addrs := AddressesFromSlices(list)
		if slices.Equal(addrs, last) {
			return
		}
		last = addrs
		b.cfg.Logger.Info("API servers learned from the kubernetes endpoints", "backends", addrs)
		b.SetEndpoints(addrs)
		if b.cfg.Learned != nil && len(addrs) > 0 {
			b.cfg.Learned(addrs)
		}
	}
	// One handler goroutine delivers the notifications, so update runs serially.
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { update() },
		UpdateFunc: func(any, any) { update() },
		DeleteFunc: func(any) { update() },
	})
	if err != nil {
		return fmt.Errorf("load balancer: watch kubernetes endpoints: %w", err)
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	return nil
}
