package cluster

import (
	"context"
	"fmt"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/registry/networking"
)

// ensureDefaultServiceCIDR publishes the cluster's service range as the "kubernetes" ServiceCIDR,
// Ready, as Kubernetes' API server does from its --service-cluster-ip-range: clients (and the
// conformance suite) read the range from it.
func ensureDefaultServiceCIDR(ctx context.Context, srv *apiserver.Server, cidr string) error {
	gr := schema.GroupResource{Group: networkingv1.GroupName, Resource: "servicecidrs"}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Errorf("service CIDR %q: %w", cidr, err)
	}
	obj := &networkingv1.ServiceCIDR{
		ObjectMeta: metav1.ObjectMeta{Name: networking.DefaultServiceCIDRName},
		// The object holds the canonical form (10.43.0.0/16 for a flag of 10.43.0.1/16).
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{prefix.Masked().String()}},
	}
	if err := srv.EnsureObject(ctx, gr, obj); err != nil {
		return err
	}
	cur, err := srv.GetLatest(ctx, gr.Group, gr.Resource, "", networking.DefaultServiceCIDRName)
	if err != nil {
		return fmt.Errorf("read the default ServiceCIDR: %w", err)
	}
	sc, ok := cur.(*networkingv1.ServiceCIDR)
	if !ok {
		return fmt.Errorf("read the default ServiceCIDR: got %T", cur)
	}
	if apimeta.IsStatusConditionTrue(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
		return nil
	}
	sc = sc.DeepCopy()
	apimeta.SetStatusCondition(&sc.Status.Conditions, metav1.Condition{
		Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
		Reason: "ServiceCIDRReady", Message: "Kubernetes Service CIDR is ready",
		LastTransitionTime: metav1.Now(),
	})
	if _, err := srv.UpdateStatus(ctx, gr.Group, gr.Resource, sc); err != nil {
		return fmt.Errorf("mark the default ServiceCIDR ready: %w", err)
	}
	return nil
}
