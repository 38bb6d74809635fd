package gateway

import (
	"context"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// watchedResources are the Gateway API resources the controller and the node's table watch.
var watchedResources = []string{"gatewayclasses", "gateways", "httproutes", "referencegrants"}

// ServesDefinitions reports whether a discovery answer for gateway.networking.k8s.io/v1 lists
// every resource the Gateway API informers watch.
func ServesDefinitions(served []string) bool {
	have := map[string]bool{}
	for _, r := range served {
		have[r] = true
	}
	for _, r := range watchedResources {
		if !have[r] {
			return false
		}
	}
	return true
}

// waitForDefinitions returns once the API server serves every watched Gateway API resource,
// asking every interval. skiff creates the definitions in the background once its API server is
// up; an informer started before them fails its list and logs an error at each retry (a clean
// start logs none).
func waitForDefinitions(ctx context.Context, d discovery.DiscoveryInterface, clk clock.Clock, interval time.Duration) error {
	for {
		if list, err := d.ServerResourcesForGroupVersion(gatewayv1.GroupVersion.String()); err == nil {
			served := make([]string, 0, len(list.APIResources))
			for _, r := range list.APIResources {
				served = append(served, r.Name)
			}
			if ServesDefinitions(served) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(interval):
		}
	}
}
