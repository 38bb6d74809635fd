package dns

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRunFollowsTheAPI: Run answers from informers (a Service created after the start resolves)
// and, when its address is taken at first, keeps retrying instead of failing.
func TestRunFollowsTheAPI(t *testing.T) {
	// Hold the port Run will want, so its first bind fails.
	held, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := held.LocalAddr().String()
	client := fake.NewClientset(namespace("default"), service("default", "kubernetes").ips("10.43.0.1").obj())
	clk := clocktesting.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Config{Addr: addr, Domain: "cluster.local", Client: client, Clock: clk}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})

	poll := func(what string, f func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true,
			func(context.Context) (bool, error) { return f(), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// Run waits to retry the bind; free the port and let the retry come.
	poll("Run waiting to retry its bind", clk.HasWaiters)
	_ = held.Close()
	clk.Step(retryListen)

	answer := func(name string) []dns.RR {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, _, err := (&dns.Client{Timeout: 500 * time.Millisecond}).Exchange(m, addr)
		if err != nil {
			return nil
		}
		return r.Answer
	}
	poll("kubernetes.default answered", func() bool { return len(answer("kubernetes.default.svc.cluster.local.")) == 1 })

	if _, err := client.CoreV1().Services("default").Create(context.Background(),
		service("default", "late").ips("10.43.0.77").obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("a Service created later answered", func() bool {
		rrs := answer("late.default.svc.cluster.local.")
		return len(rrs) == 1 && rrs[0].(*dns.A).A.String() == "10.43.0.77"
	})
}
