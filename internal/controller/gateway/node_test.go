package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// The node's table follows the cluster: the first table serves the route's pods, and a route
// changed to another backend is in the next one.
func TestRunTableFollowsChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	core := fake.NewSimpleClientset(service("ns", "web"), service("ns", "api"),
		endpointSlice("ns", "web", 8080, "10.1.0.1"), endpointSlice("ns", "api", 9090, "10.1.0.2"))
	gw := gatewayfake.NewSimpleClientset(class("skiff", ControllerName), makeRoute("ns", "r").parent("", "gw", "").backend("", "", "web").obj())
	// Created through the client: the fake's tracker, seeded, files a Gateway under "gatewaies"
	// (its guess of the plural), where the informer's list never looks.
	if _, err := gw.GatewayV1().Gateways("ns").Create(ctx, makeGateway("ns", "gw").listener("http", 80, gatewayv1.HTTPProtocolType).obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tables := make(chan routes.Table, 16)
	wg.Go(func() {
		if err := RunTable(ctx, TableOptions{Client: core, Gateway: gw, Set: func(t routes.Table) error { tables <- t; return nil }}); err != nil {
			t.Error(err)
		}
	})
	// next waits for a table whose port 80 sends every request to want.
	next := func(want string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case tbl := <-tables:
				if len(tbl.Listeners) == 1 && tbl.Listeners[0].Port == 80 && len(tbl.Listeners[0].Hosts) == 1 {
					if rs := tbl.Listeners[0].Hosts[0].Routes; len(rs) == 1 && len(rs[0].Backends) == 1 &&
						len(rs[0].Backends[0].Endpoints) == 1 && rs[0].Backends[0].Endpoints[0].Address == want {
						return
					}
				}
			case <-deadline:
				t.Fatalf("no table sending port 80 to %s", want)
			}
		}
	}
	next("10.1.0.1:8080")
	r, err := gw.GatewayV1().HTTPRoutes("ns").Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Spec.Rules[0].BackendRefs[0].Name = "api"
	if _, err := gw.GatewayV1().HTTPRoutes("ns").Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("10.1.0.2:9090")
}
