package leasereconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/etcd/etcdtest"
)

func endpointIPs(t *testing.T, c kubernetes.Interface) ([]string, []string) {
	t.Helper()
	ctx := context.Background()
	var eps, sl []string
	if ep, err := c.CoreV1().Endpoints("default").Get(ctx, ServiceName, metav1.GetOptions{}); err == nil {
		for _, s := range ep.Subsets {
			for _, a := range s.Addresses {
				eps = append(eps, a.IP)
			}
		}
	}
	if s, err := c.DiscoveryV1().EndpointSlices("default").Get(ctx, ServiceName, metav1.GetOptions{}); err == nil {
		sl = endpointAddrs(s)
	}
	slices.Sort(eps)
	return eps, sl
}

func waitEndpoints(t *testing.T, c kubernetes.Interface, want ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		eps, sl := endpointIPs(t, c)
		if slices.Equal(eps, want) && slices.Equal(sl, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoints %v, slice %v; want %v", eps, sl, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTwoServersShareTheEndpoints runs two reconcilers on one etcd: both are listed; a stopping one
// removes itself before Run returns; a server that vanished without stopping drops out when its
// master lease lapses.
func TestTwoServersShareTheEndpoints(t *testing.T) {
	m := etcdtest.StartEmbedded(t, etcdtest.Options{})
	etcd := etcdtest.Client(t, m)
	client := fake.NewClientset()
	start := func(ip string) (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Config{Etcd: etcd, Client: client, Identity: "node-" + ip, IP: ip, Port: 6443, MasterLeaseTTL: 3 * time.Second})
		}()
		return cancel, done
	}
	stopA, doneA := start("10.0.0.1")
	defer func() { stopA(); <-doneA }()
	stopB, doneB := start("10.0.0.2")
	waitEndpoints(t, client, "10.0.0.1", "10.0.0.2")

	leases, err := client.CoordinationV1().Leases("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: IdentityLabel + "=kube-apiserver"})
	if err != nil || len(leases.Items) != 2 {
		t.Fatalf("identity leases: %v, %v", leases, err)
	}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil || *l.Spec.LeaseDurationSeconds != 3600 {
			t.Fatalf("identity lease %s incomplete: %+v", l.Name, l.Spec)
		}
	}

	stopB()
	if err := <-doneB; err != nil {
		t.Fatalf("stop: %v", err)
	}
	// Removed before Run returned, not a TTL later.
	if eps, sl := endpointIPs(t, client); !slices.Equal(eps, []string{"10.0.0.1"}) || !slices.Equal(sl, []string{"10.0.0.1"}) {
		t.Fatalf("after a clean stop: endpoints %v, slice %v", eps, sl)
	}

	// A server that died: its master lease is never refreshed and lapses after its TTL.
	ctx := context.Background()
	lease, err := etcd.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	val, _ := json.Marshal(masterLease{IP: "10.0.0.3", Port: 6443})
	if _, err := etcd.Put(ctx, MasterLeasePrefix+"10.0.0.3", string(val), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, client, "10.0.0.1", "10.0.0.3")
	waitEndpoints(t, client, "10.0.0.1")
}

// TestLoopbackServerIsNotListed: a server advertising a loopback address writes no master lease
// and no endpoints (validation would refuse them), but keeps its identity lease.
func TestLoopbackServerIsNotListed(t *testing.T) {
	m := etcdtest.StartEmbedded(t, etcdtest.Options{})
	etcd := etcdtest.Client(t, m)
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Etcd: etcd, Client: client, Identity: "solo", IP: "127.0.0.1", Port: 6443})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := client.CoordinationV1().Leases("kube-system").Get(ctx, IdentityLeaseName("solo"), metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no identity lease")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	resp, err := etcd.Get(context.Background(), MasterLeasePrefix, clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("master leases: %v, %v", resp, err)
	}
	if eps, sl := endpointIPs(t, client); eps != nil || sl != nil {
		t.Fatal(fmt.Sprint("endpoints written: ", eps, sl))
	}
}

// TestIdentityLeaseCarriesAnnotations: what the server publishes on its identity Lease follows
// each change at once when RenewNow fires, not an interval later, and an empty value removes it.
func TestIdentityLeaseCarriesAnnotations(t *testing.T) {
	m := etcdtest.StartEmbedded(t, etcdtest.Options{})
	etcd := etcdtest.Client(t, m)
	client := fake.NewClientset()
	var current atomic.Pointer[string]
	first := "hash-1"
	current.Store(&first)
	renew := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Etcd: etcd, Client: client, Identity: "node-a", IP: "127.0.0.1", Port: 6443,
			IdentityRenewInterval: time.Hour, RenewNow: renew,
			Annotations: func() map[string]string { return map[string]string{"example.com/hash": *current.Load()} }})
	}()
	defer func() { cancel(); <-done }()
	annotation := func() string {
		l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), IdentityLeaseName("node-a"), metav1.GetOptions{})
		if err != nil {
			return "<" + err.Error() + ">"
		}
		v, ok := l.Annotations["example.com/hash"]
		if !ok {
			return "<none>"
		}
		return v
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for annotation() != want {
			if time.Now().After(deadline) {
				t.Fatalf("identity lease annotation %q; want %q", annotation(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("hash-1")
	second := "hash-2"
	current.Store(&second)
	renew <- struct{}{}
	waitFor("hash-2")
	empty := ""
	current.Store(&empty)
	renew <- struct{}{}
	waitFor("<none>")
}
