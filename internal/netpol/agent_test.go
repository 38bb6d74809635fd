package netpol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/netnstest"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// testNode is a node namespace with a bridge and one namespace per pod on it, each pod
// listening on TCP 8080 (a closed port 8081 answers with a reset: the control that proves a
// packet reached the pod).
type testNode struct {
	t    *testing.T
	host proxy.Host
	pods map[string]string // pod name -> address
	ns   map[string]string // pod name -> network namespace
}

func newTestNode(t *testing.T, pods ...string) *testNode {
	node := netnstest.New(t, "sknn", "nft", "sysctl")
	n := &testNode{t: t, host: proxy.Host{Wrap: []string{"ip", "netns", "exec", node}}, pods: map[string]string{}, ns: map[string]string{}}
	netnstest.MustRun(t, "ip", "-n", node, "link", "add", "br0", "type", "bridge")
	netnstest.MustRun(t, "ip", "-n", node, "addr", "add", "10.99.0.1/24", "dev", "br0")
	netnstest.MustRun(t, "ip", "-n", node, "link", "set", "br0", "up")
	netnstest.MustRun(t, "ip", "netns", "exec", node, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1")
	for i, p := range pods {
		pns := netnstest.New(t, "sknp", "ip")
		addr := fmt.Sprintf("10.99.0.%d", i+2)
		veth := fmt.Sprintf("v%d", i)
		netnstest.MustRun(t, "ip", "-n", node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", pns)
		netnstest.MustRun(t, "ip", "-n", node, "link", "set", veth, "master", "br0", "up")
		netnstest.MustRun(t, "ip", "-n", pns, "addr", "add", addr+"/24", "dev", "eth0")
		netnstest.MustRun(t, "ip", "-n", pns, "link", "set", "eth0", "up")
		n.pods[p], n.ns[p] = addr, pns
		var ln net.Listener
		if err := netnstest.Run(pns, func() { ln, _ = net.Listen("tcp4", addr+":8080") }); err != nil || ln == nil {
			t.Fatalf("listen in %s: %v", p, err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	return n
}

// dial connects from pod from to pod to's port: nil when accepted, a refusal or a timeout.
func (n *testNode) dial(from, to string, port int) error {
	var err error
	if rerr := netnstest.Run(n.ns[from], func() {
		var c net.Conn
		c, err = net.DialTimeout("tcp4", fmt.Sprintf("%s:%d", n.pods[to], port), 700*time.Millisecond)
		if err == nil {
			c.Close()
		}
	}); rerr != nil {
		return rerr
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// eventually polls check until it returns nil (the agent syncs asynchronously).
func (n *testNode) eventually(what string, check func() error) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("%s: %v\n%s", what, err, n.listing())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (n *testNode) listing() string {
	out, _ := n.host.Output(context.Background(), "", "nft", "list", "ruleset")
	return out
}

// accepted waits until from reaches to's open port; dropped until the connection times out,
// while the closed port of the same pod still answers with a refusal from an allowed client
// (control) and the direction's drop counter grows.
func (n *testNode) accepted(from, to string) {
	n.t.Helper()
	n.eventually(from+" -> "+to+" accepted", func() error { return n.dial(from, to, 8080) })
}

func (n *testNode) dropped(from, to string, ingress bool) {
	n.t.Helper()
	before := n.drops(ingress)
	n.eventually(from+" -> "+to+" dropped", func() error {
		err := n.dial(from, to, 8080)
		if err == nil {
			return fmt.Errorf("accepted")
		}
		if !isTimeout(err) {
			return fmt.Errorf("not dropped but %v", err)
		}
		return nil
	})
	if after := n.drops(ingress); after <= before {
		n.t.Errorf("%s -> %s timed out but the drop counter stayed at %d", from, to, after)
	}
}

func (n *testNode) drops(ingress bool) uint64 {
	in, out, err := DroppedPackets(context.Background(), n.host, Table("SKtest"))
	if err != nil {
		return 0
	}
	if ingress {
		return in
	}
	return out
}

func (n *testNode) pod(ns, name string, labels map[string]string) *corev1.Pod {
	p := MakePod(ns, name).Node("n1").IP(n.pods[name]).Obj()
	p.Labels = labels
	return p
}

// TestAgentEnforces runs the agent against a fake API on a node namespace with three pods on
// one bridge, and checks real connections both ways as policies, labels and the agent change.
func TestAgentEnforces(t *testing.T) {
	n := newTestNode(t, "web", "cli", "other")
	client := fake.NewClientset(
		ns("a", nil), ns("b", nil),
		n.pod("a", "web", map[string]string{"app": "web"}),
		n.pod("a", "cli", map[string]string{"app": "cli"}),
		n.pod("b", "other", map[string]string{"app": "cli"}),
	)
	ctx := context.Background()
	start := func() (stop func()) {
		actx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Run(actx, client, Options{NodeName: "n1", Prefix: "SKtest", Host: n.host, BridgeNetfilter: "-",
				MinSyncInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Errorf("agent: %v", err)
			}
		}()
		return func() { cancel(); wg.Wait() }
	}
	stop := start()
	defer func() { stop() }()
	np := client.NetworkingV1().NetworkPolicies
	create := func(p *networkingv1.NetworkPolicy) {
		t.Helper()
		if _, err := np(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n.accepted("cli", "web")
	n.accepted("other", "web")

	t.Log("default deny in a: both clients dropped; the web pod's own connections out still work")
	create(MakePolicy("a", "deny").Obj())
	n.dropped("cli", "web", true)
	n.dropped("other", "web", true)
	n.accepted("web", "other")

	t.Log("allow by pod label in the policy's namespace")
	create(MakePolicy("a", "from-cli").Select("app", "web").Ingress([]networkingv1.NetworkPolicyPeer{podPeer("app", "cli")}).Obj())
	n.accepted("cli", "web")
	n.dropped("other", "web", true)

	t.Log("allow by namespace label: labelling namespace b opens it")
	create(MakePolicy("a", "from-team").Select("app", "web").Ingress([]networkingv1.NetworkPolicyPeer{nsPeer("team", "x")}, tcp(8080)).Obj())
	n.dropped("other", "web", true)
	if _, err := client.CoreV1().Namespaces().Update(ctx, ns("b", map[string]string{"team": "x"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.accepted("other", "web")

	t.Log("a stopped agent leaves its rules enforcing; restarted, it follows what changed meanwhile")
	if _, err := client.CoreV1().Namespaces().Update(ctx, ns("b", nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.dropped("other", "web", true)
	stop()
	n.dropped("other", "web", true)
	n.accepted("cli", "web")
	if _, err := client.CoreV1().Namespaces().Update(ctx, ns("b", map[string]string{"team": "x"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop = start()
	n.accepted("other", "web")

	t.Log("egress deny on the pods of b, except to the named port http of app=web pods")
	create(MakePolicy("b", "out").Types(networkingv1.PolicyTypeEgress).
		Egress([]networkingv1.NetworkPolicyPeer{{PodSelector: podPeer("app", "web").PodSelector, NamespaceSelector: &metav1.LabelSelector{}}}, named("http")).Obj())
	n.dropped("other", "web", false) // web declares no port named http yet
	pw := n.pod("a", "web", map[string]string{"app": "web"})
	pw.Spec.Containers = []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}
	if _, err := client.CoreV1().Pods("a").Update(ctx, pw, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.accepted("other", "web")
	n.dropped("other", "cli", false)
	// Replies of a connection web opens to other pass although other's egress is closed.
	n.accepted("web", "other")

	t.Log("every policy deleted: all open again")
	for _, p := range []struct{ ns, name string }{{"a", "deny"}, {"a", "from-cli"}, {"a", "from-team"}, {"b", "out"}} {
		if err := np(p.ns).Delete(ctx, p.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n.accepted("other", "web")
	n.accepted("cli", "other")
}
