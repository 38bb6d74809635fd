package cloudmanager

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/cloudprovider"
)

// testProvider is a provider with a LoadBalancer only, answering with one fixed address.
type testProvider struct{}

func (testProvider) ProviderName() string                               { return "test" }
func (p testProvider) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return p, true }
func (testProvider) Instances() (cloudprovider.Instances, bool)         { return nil, false }
func (testProvider) Routes() (cloudprovider.Routes, bool)               { return nil, false }
func (testProvider) GetLoadBalancer(context.Context, string, *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	return nil, false, nil
}
func (testProvider) EnsureLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}, nil
}
func (testProvider) UpdateLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) error {
	return nil
}
func (testProvider) EnsureLoadBalancerDeleted(context.Context, string, *corev1.Service) error {
	return nil
}

func TestRunProviders(t *testing.T) {
	r := &cloudprovider.Registry{}
	if err := r.Register("test", func(cloudprovider.InitContext) (cloudprovider.Interface, error) { return testProvider{}, nil }); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	if err := Run(context.Background(), Config{Client: client, Registry: r, Provider: "none"}); err != nil {
		t.Errorf("none: %v", err)
	}
	if err := Run(context.Background(), Config{Client: client, Registry: r, Provider: "aws"}); !errors.Is(err, cloudprovider.ErrUnknown) || !strings.Contains(err.Error(), "test") {
		t.Errorf("unknown provider: %v", err)
	}
}

// TestRunLeads: the manager takes the Lease and, leading, runs the provider's service controller.
func TestRunLeads(t *testing.T) {
	r := &cloudprovider.Registry{}
	if err := r.Register("test", func(cloudprovider.InitContext) (cloudprovider.Interface, error) { return testProvider{}, nil }); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	client := fake.NewClientset(svc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Client: client, Registry: r, Provider: "test", Identity: "me",
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err == nil && len(got.Status.LoadBalancer.Ingress) == 1 && cloudprovider.HasCleanupFinalizer(got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service never got its balancer: %+v %v", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "me" {
		t.Errorf("lease: %+v %v", lease, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
}
