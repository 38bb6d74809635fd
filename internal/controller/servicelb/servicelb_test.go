package servicelb

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/cloudprovider"
	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func lbSvc(mut ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	for _, m := range mut {
		m(s)
	}
	return s
}

func withFinalizer(s *corev1.Service) {
	s.Finalizers = append(s.Finalizers, cloudprovider.LoadBalancerCleanupFinalizer)
}
func withIngress(s *corev1.Service) {
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "172.31.5.2"}}
}
func clusterIP(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }
func deleting(s *corev1.Service)  { s.DeletionTimestamp = &metav1.Time{} }
func otherClass(s *corev1.Service) {
	c := "example.com/lb"
	s.Spec.LoadBalancerClass = &c
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want Action
	}{
		{"load balancer", lbSvc(), Ensure},
		{"with finalizer and ingress", lbSvc(withFinalizer, withIngress), Ensure},
		{"cluster IP", lbSvc(clusterIP), Nothing},
		{"type changed away with finalizer", lbSvc(clusterIP, withFinalizer), Cleanup},
		{"type changed away, ingress left", lbSvc(clusterIP, withIngress), Cleanup},
		{"deleting with finalizer", lbSvc(deleting, withFinalizer), Cleanup},
		{"another class", lbSvc(otherClass), Nothing},
		{"another class's ingress is theirs", lbSvc(otherClass, withIngress), Nothing},
	}
	for _, tt := range tests {
		if got := Decide(tt.svc); got != tt.want {
			t.Errorf("%s: Decide = %v, want %v", tt.name, got, tt.want)
		}
	}
}

type fakeLB struct {
	err     error
	deleted []string
}

func (f *fakeLB) GetLoadBalancer(context.Context, string, *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	return nil, false, nil
}
func (f *fakeLB) EnsureLoadBalancer(_ context.Context, _ string, _ *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	if f.err != nil {
		return nil, f.err
	}
	st := &corev1.LoadBalancerStatus{}
	for _, n := range nodes {
		st.Ingress = append(st.Ingress, corev1.LoadBalancerIngress{IP: n.Status.Addresses[0].Address})
	}
	return st, nil
}
func (f *fakeLB) UpdateLoadBalancer(context.Context, string, *corev1.Service, []*corev1.Node) error {
	return nil
}
func (f *fakeLB) EnsureLoadBalancerDeleted(_ context.Context, _ string, svc *corev1.Service) error {
	f.deleted = append(f.deleted, svc.Name)
	return f.err
}

func TestReconcile(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.31.5.2"}}}}
	tests := []struct {
		name    string
		svc     *corev1.Service
		lbErr   error
		writes  []string
		events  []string
		wantErr bool
		deleted bool
		ingress string
	}{
		{name: "new balancer: finalizer, then status", svc: lbSvc(),
			writes: []string{"patch services web", "patch services/status web"},
			events: []string{"Normal EnsuringLoadBalancer", "Normal EnsuredLoadBalancer"}, ingress: "172.31.5.2"},
		{name: "in place: no write", svc: lbSvc(withFinalizer, withIngress)},
		{name: "provider fails: warning event, error to requeue", svc: lbSvc(withFinalizer), lbErr: errors.New("no node can take the service's ports"),
			events: []string{"Normal EnsuringLoadBalancer", "Warning SyncLoadBalancerFailed Error syncing load balancer: no node can take"}, wantErr: true},
		{name: "type changed away: status cleared, finalizer dropped", svc: lbSvc(clusterIP, withFinalizer, withIngress),
			writes: []string{"patch services/status web", "patch services web"}, deleted: true,
			events: []string{"Normal DeletingLoadBalancer", "Normal DeletedLoadBalancer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := ctrltest.NewEnv(tt.svc, node)
			lb := &fakeLB{err: tt.lbErr}
			c, err := New(env.Deps, lb, "skiff")
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Core().V1().Services().Informer(), tt.svc)
			ctrltest.Seed(t, env.Factory.Core().V1().Nodes().Informer(), node)
			err = c.reconcile(context.Background(), "default/web")
			if (err != nil) != tt.wantErr {
				t.Fatalf("reconcile: %v", err)
			}
			if got := ctrltest.Describe(env.Writes()); !reflect.DeepEqual(got, tt.writes) {
				t.Errorf("writes %v, want %v", got, tt.writes)
			}
			events := env.Events()
			if len(events) != len(tt.events) {
				t.Fatalf("events %q, want %q", events, tt.events)
			}
			for i := range events {
				if !strings.HasPrefix(events[i], tt.events[i]) {
					t.Errorf("event %q, want %q...", events[i], tt.events[i])
				}
			}
			if (len(lb.deleted) > 0) != tt.deleted {
				t.Errorf("EnsureLoadBalancerDeleted called: %v", lb.deleted)
			}
			got, err := env.Client.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.ingress != "" {
				if len(got.Status.LoadBalancer.Ingress) != 1 || got.Status.LoadBalancer.Ingress[0].IP != tt.ingress || !cloudprovider.HasCleanupFinalizer(got) {
					t.Errorf("service after: finalizers %v status %+v", got.Finalizers, got.Status.LoadBalancer)
				}
			}
			if tt.deleted && (cloudprovider.HasCleanupFinalizer(got) || len(got.Status.LoadBalancer.Ingress) > 0) {
				t.Errorf("cleaned service still has finalizers %v ingress %v", got.Finalizers, got.Status.LoadBalancer.Ingress)
			}
		})
	}
}
