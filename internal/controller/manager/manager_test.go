package manager

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// probe is a controller that records which manager instance runs it.
type probe struct {
	mu      sync.Mutex
	running map[string]bool
	started map[string]int
}

func newProbe() *probe { return &probe{running: map[string]bool{}, started: map[string]int{}} }

type probeRunner struct {
	p        *probe
	identity string
}

func (r probeRunner) Run(ctx context.Context, _ int) {
	r.p.mu.Lock()
	r.p.running[r.identity] = true
	r.p.started[r.identity]++
	r.p.mu.Unlock()
	<-ctx.Done()
	r.p.mu.Lock()
	r.p.running[r.identity] = false
	r.p.mu.Unlock()
}

func (p *probe) snapshot() (map[string]bool, map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	running, started := map[string]bool{}, map[string]int{}
	for k, v := range p.running {
		running[k] = v
	}
	for k, v := range p.started {
		started[k] = v
	}
	return running, started
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testConfig(client *fake.Clientset, identity string) Config {
	return Config{
		Client:      client,
		Identity:    identity,
		Controllers: []string{ReplicaSet},
		LeaderElection: LeaderElection{
			LeaseDuration: time.Second,
			RenewDeadline: 500 * time.Millisecond,
			RetryPeriod:   100 * time.Millisecond,
		},
	}
}

func TestOnlyTheLeaderRunsControllers(t *testing.T) {
	client := fake.NewClientset()
	p := newProbe()
	registryFor := func(identity string) map[string]constructor {
		return map[string]constructor{ReplicaSet: func(ctrlutil.Deps, *Config) (ctrlutil.Runner, error) {
			return probeRunner{p: p, identity: identity}, nil
		}}
	}

	ctxA, cancelA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() { doneA <- run(ctxA, testConfig(client, "a"), registryFor("a")) }()
	waitFor(t, "a to lead", func() bool { r, _ := p.snapshot(); return r["a"] })

	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	doneB := make(chan error, 1)
	go func() { doneB <- run(ctxB, testConfig(client, "b"), registryFor("b")) }()

	// b retries several times while a renews; it must stay a standby.
	time.Sleep(500 * time.Millisecond)
	if _, started := p.snapshot(); started["b"] != 0 {
		t.Fatalf("standby b ran controllers while a held the lease")
	}
	lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "a" {
		t.Fatalf("lease holder = %v, want a", lease.Spec.HolderIdentity)
	}

	cancelA()
	if err := <-doneA; err != nil {
		t.Fatalf("a returned %v after its context ended, want nil", err)
	}
	if r, _ := p.snapshot(); r["a"] {
		t.Fatalf("a's controllers still running after Run returned")
	}
	waitFor(t, "b to take over", func() bool { r, _ := p.snapshot(); return r["b"] })

	cancelB()
	if err := <-doneB; err != nil {
		t.Fatalf("b returned %v", err)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"no client", func(c *Config) { c.Client = nil }, "client is required"},
		{"unknown controller", func(c *Config) { c.Controllers = []string{"bogus"} }, "not in the list of known controllers"},
		{"renew >= lease", func(c *Config) { c.LeaderElection.RenewDeadline = 2 * time.Second }, "must be greater than renew deadline"},
		{"bad cidr", func(c *Config) { c.ClusterCIDR = "10.0.0.0/33" }, "cluster CIDR"},
		{"mask smaller than cidr", func(c *Config) { c.ClusterCIDR = "10.0.0.0/16"; c.NodeCIDRMaskSize = 8 }, "node CIDR mask size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(fake.NewClientset(), "x")
			tt.mutate(&cfg)
			err := Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestExplicitUnavailableControllerIsAnError(t *testing.T) {
	cfg := testConfig(fake.NewClientset(), "x")
	cfg.Controllers = []string{ReplicaSet}
	err := run(context.Background(), cfg, map[string]constructor{})
	if err == nil || !strings.Contains(err.Error(), "not available yet") {
		t.Fatalf("err = %v", err)
	}
}

func TestDefaults(t *testing.T) {
	var c Config
	c.Default()
	le := c.LeaderElection
	if le.Disabled || le.Namespace != "kube-system" || le.Name != "kube-controller-manager" ||
		le.LeaseDuration != 15*time.Second || le.RenewDeadline != 10*time.Second || le.RetryPeriod != 2*time.Second {
		t.Fatalf("leader election defaults: %+v", le)
	}
	if c.NodeMonitorGracePeriod != 40*time.Second || c.Workers != 5 || len(c.Controllers) != 1 || c.Controllers[0] != "*" ||
		c.ClusterSigningDuration != 8760*time.Hour {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestReconcileMetricsAreRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := ctrlutil.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveReconcile("replicaset", nil)
	m.ObserveReconcile("replicaset", errors.New("boom"))
	m.NewDepthMetric("replicaset").Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, want := range []string{"skiff_controller_reconcile_total", "workqueue_depth"} {
		if !names[want] {
			t.Errorf("metric %s not gathered; have %v", want, names)
		}
	}
}
