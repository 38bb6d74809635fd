package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

type instance struct {
	identity string
	reg      *prometheus.Registry
	cancel   context.CancelFunc
	done     chan error
}

func startElected(t *testing.T, cs *fake.Clientset, identity string) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{identity: identity, reg: prometheus.NewRegistry(), cancel: cancel, done: make(chan error, 1)}
	cfg := Config{
		Client: cs, Logger: quietLogger(), Registerer: in.reg, Identity: identity, LeaderElect: true,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
	}
	go func() { in.done <- Run(ctx, cfg) }()
	t.Cleanup(func() { cancel(); <-in.done })
	return in
}

func (in *instance) scheduled(t *testing.T) float64 {
	return counterValue(t, in.reg, "scheduler_schedule_attempts_total", map[string]string{"result": "scheduled"})
}

func leaseHolder(cs *fake.Clientset) string {
	l, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-scheduler", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestLeaderElectionOnlyLeaderBinds(t *testing.T) {
	cs := fake.NewClientset()
	st.InstallBindingReactor(cs, nil)
	a := startElected(t, cs, "sched-a")
	b := startElected(t, cs, "sched-b")
	waitFor(t, "a leader", func() bool { return leaseHolder(cs) != "" })
	leader, standby := a, b
	if leaseHolder(cs) == b.identity {
		leader, standby = b, a
	}
	create(t, cs, st.MakeNode().Name("n1").Capacity(st.Res{"cpu": "8", "pods": "100"}).Obj())
	for i := range 5 {
		create(t, cs, st.MakePod().Name(fmt.Sprintf("first%d", i)).Req(st.Res{"cpu": "100m"}).Obj())
	}
	waitFor(t, "first pods bound", func() bool { return len(st.Bindings(cs)) == 5 })
	// The attempt metric is recorded just after the Binding call returns.
	waitFor(t, "first attempts recorded", func() bool { return leader.scheduled(t)+standby.scheduled(t) == 5 })
	if leader.scheduled(t) != 5 || standby.scheduled(t) != 0 {
		t.Fatalf("leader scheduled %v, standby %v", leader.scheduled(t), standby.scheduled(t))
	}

	// The leader stops (releasing the lease); the standby takes over.
	leader.cancel()
	if err := <-leader.done; err != nil {
		t.Fatalf("leader Run: %v", err)
	}
	leader.done <- nil // for Cleanup
	waitFor(t, "standby leads", func() bool { return leaseHolder(cs) == standby.identity })
	for i := range 3 {
		create(t, cs, st.MakePod().Name(fmt.Sprintf("second%d", i)).Req(st.Res{"cpu": "100m"}).Obj())
	}
	waitFor(t, "second pods bound", func() bool { return len(st.Bindings(cs)) == 8 })
	waitFor(t, "second attempts recorded", func() bool { return leader.scheduled(t)+standby.scheduled(t) == 8 })
	if leader.scheduled(t) != 5 || standby.scheduled(t) != 3 {
		t.Fatalf("after takeover: old leader %v, new leader %v", leader.scheduled(t), standby.scheduled(t))
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no client", Config{}, "Client or RestConfig"},
		{"lease shorter than renew", Config{Client: fake.NewClientset(), LeaderElect: true, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}, "leaseDuration"},
		{"retry not below renew", Config{Client: fake.NewClientset(), LeaderElect: true, RenewDeadline: time.Second, RetryPeriod: time.Second}, "retryPeriod"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Default()
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	ok := Config{Client: fake.NewClientset(), LeaderElect: true}
	ok.Default()
	if err := ok.Validate(); err != nil || ok.LeaseName != "kube-scheduler" || ok.LeaseNamespace != "kube-system" || ok.LeaseDuration != 15*time.Second || ok.Identity == "" {
		t.Fatalf("defaults %+v: %v", ok, err)
	}
	if err := Run(context.Background(), Config{}); err == nil {
		t.Fatal("Run must validate")
	}
}
