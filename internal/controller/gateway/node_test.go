package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
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
	serveDefinitions(gw)
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

// serveDefinitions makes the fake's discovery list the watched Gateway API resources, as the
// API server does once skiff created their definitions.
func serveDefinitions(gw *gatewayfake.Clientset) {
	list := &metav1.APIResourceList{GroupVersion: gatewayv1.GroupVersion.String()}
	for _, r := range watchedResources {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r})
	}
	gw.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{list}
}

// TestWaitForDefinitions: the informers start only once every watched resource is served (the
// definitions are created one by one after the API server is up); a stop ends the wait.
func TestWaitForDefinitions(t *testing.T) {
	for _, tc := range []struct {
		served []string
		want   bool
	}{
		{nil, false},
		{[]string{"gatewayclasses", "gateways"}, false},
		{[]string{"gatewayclasses", "gateways", "httproutes", "referencegrants", "grpcroutes"}, true},
	} {
		if got := ServesDefinitions(tc.served); got != tc.want {
			t.Errorf("ServesDefinitions(%v) = %v, want %v", tc.served, got, tc.want)
		}
	}

	gw := gatewayfake.NewSimpleClientset()
	clk := clocktesting.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- waitForDefinitions(ctx, gw.Discovery(), clk, time.Second) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("returned before the definitions were served: %v", err)
	default:
	}
	serveDefinitions(gw)
	clk.Step(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("once served: %v", err)
	}

	stopped, stop := context.WithCancel(context.Background())
	stop()
	if err := waitForDefinitions(stopped, gatewayfake.NewSimpleClientset().Discovery(), clk, time.Second); err == nil {
		t.Fatal("a stopped wait returned no error")
	}
}
