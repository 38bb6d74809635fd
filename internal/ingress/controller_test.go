package ingress

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/ingress/routes"
)

// TestRunNodeFollowsChanges: the data plane gets a table with an Ingress's route once the
// Ingress, its Service and endpoints exist, and a new one when the Ingress changes.
func TestRunNodeFollowsChanges(t *testing.T) {
	ing := newIngress("a").Class(ClassName).Path("a.test", "/", networkingv1.PathTypePrefix, "web").Obj()
	client := fake.NewClientset(class(ClassName, ControllerName, true), ing, service("web"), endpoints("web", "10.0.0.1"))
	tables := make(chan routes.Table, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunNode(ctx, NodeOptions{Client: client, HTTPPort: 80, HTTPSPort: 443, Set: func(t routes.Table) error { tables <- t; return nil }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunNode: %v", err)
		}
	}()
	waitFor := func(what string, ok func(routes.Table) bool) {
		t.Helper()
		deadline := time.After(30 * time.Second) // a bound on a hang, not a timing assertion
		for {
			select {
			case tbl := <-tables:
				if ok(tbl) {
					return
				}
			case <-deadline:
				t.Fatalf("no table with %s", what)
			}
		}
	}
	routeTo := func(path, endpoint string) func(routes.Table) bool {
		return func(tbl routes.Table) bool {
			for _, l := range tbl.Listeners {
				if l.Port != 80 {
					continue
				}
				for _, h := range l.Hosts {
					for _, r := range h.Routes {
						if h.Hostname == "a.test" && r.Match.Path.Value == path && len(r.Backends[0].Endpoints) == 1 && r.Backends[0].Endpoints[0].Address == endpoint {
							return true
						}
					}
				}
			}
			return false
		}
	}
	waitFor("a.test / to 10.0.0.1", routeTo("/", "10.0.0.1:8080"))
	ing2 := ing.DeepCopy()
	ing2.Spec.Rules[0].HTTP.Paths[0].Path = "/v2"
	if _, err := client.NetworkingV1().Ingresses("ns").Update(context.Background(), ing2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("a.test /v2", routeTo("/v2", "10.0.0.1:8080"))
}

func TestSyncStatus(t *testing.T) {
	served := newIngress("served").Obj()
	other := newIngress("other").Class("nginx").Obj()
	nginx := class("nginx", "k8s.io/ingress-nginx", false)
	n := node("a", true, internal("10.0.0.1"))
	client := fake.NewClientset(served, other, nginx, n)
	if err := syncStatus(context.Background(), &StatusOptions{Client: client, Logger: discard()}, []*networkingv1.IngressClass{nginx}, []*networkingv1.Ingress{served, other}, []*corev1.Node{n}); err != nil {
		t.Fatal(err)
	}
	var did []string
	for _, a := range client.Actions() {
		did = append(did, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
	}
	want := []string{"create ingressclasses/", "update ingresses/status"}
	if len(did) != len(want) || did[0] != want[0] || did[1] != want[1] {
		t.Fatalf("actions = %v, want %v", did, want)
	}
	c, err := client.NetworkingV1().IngressClasses().Get(context.Background(), ClassName, metav1.GetOptions{})
	if err != nil || c.Annotations[DefaultClassAnnotation] != "true" {
		t.Fatalf("class skiff: %v %v", c, err)
	}
	got, err := client.NetworkingV1().Ingresses("ns").Get(context.Background(), "served", metav1.GetOptions{})
	if err != nil || len(got.Status.LoadBalancer.Ingress) != 1 || got.Status.LoadBalancer.Ingress[0].IP != "10.0.0.1" {
		t.Fatalf("served status: %+v %v", got.Status, err)
	}
}
