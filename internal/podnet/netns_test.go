package podnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/netnstest"
)

// TestAgentInNetns runs the agent on a fake API in a network namespace of its own, whose only
// link is a dummy-like veth on 172.31.X.0/24: routes to the two other nodes' podCIDRs appear
// (protocol 73, via their addresses), the node off the subnet gets none, a deleted node's route
// goes, a route removed by hand is not left missing after the next change, the masquerade chain
// keeps pod-to-pod traffic unNATed, and a stop removes routes and chain.
func TestAgentInNetns(t *testing.T) {
	ns := netnstest.New(t, "skpn", "iptables")
	sub := fmt.Sprintf("172.31.%d", 100+rand.IntN(150))
	netnstest.MustRun(t, "ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
	netnstest.MustRun(t, "ip", "-n", ns, "addr", "add", sub+".2/24", "dev", "eth0")
	netnstest.MustRun(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	netnstest.MustRun(t, "ip", "-n", ns, "link", "set", "eth1", "up")

	client := fake.NewClientset(
		node("a").cidr("10.42.0.0/24").ip(sub+".2").obj(),
		node("b").cidr("10.42.1.0/24").ip(sub+".3").obj(),
		node("c").cidr("10.42.2.0/24").ip(sub+".4").obj(),
		node("far").cidr("10.42.3.0/24").ip("192.0.2.9").obj(),
	)
	host := Host{Metric: 4242, Chain: "SKNtest-MASQ"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var runErr error
		err := netnstest.Run(ns, func() {
			runErr = Run(ctx, client, Options{NodeName: "a", ClusterCIDR: netip.MustParsePrefix("10.42.0.0/16"), Host: host,
				Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
		})
		done <- errors.Join(err, runErr)
	}()
	t.Cleanup(func() { cancel(); <-done })

	routes := func() string {
		return netnstest.MustRun(t, "ip", "-n", ns, "-4", "route", "show", "proto", "73")
	}
	waitFor := func(what string, cond func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok, detail := cond()
			if ok {
				return
			}
			select {
			case err := <-done:
				t.Fatalf("agent ended: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%s", what, detail)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("routes to b and c", func() (bool, string) {
		r := routes()
		return strings.Contains(r, "10.42.1.0/24 via "+sub+".3") && strings.Contains(r, "10.42.2.0/24 via "+sub+".4"), r
	})
	if r := routes(); strings.Contains(r, "10.42.3.0") || strings.Contains(r, "10.42.0.0") {
		t.Errorf("a route to the node off the subnet or to itself:\n%s", r)
	}
	// The chain is written after the routes, in the same sync.
	waitFor("the masquerade chain and its hook", func() (bool, string) {
		nat := netnstest.MustRun(t, "ip", "netns", "exec", ns, "iptables", "-w", "-t", "nat", "-S")
		for _, want := range []string{
			"-A POSTROUTING -m comment --comment \"skiff pod network\" -j SKNtest-MASQ",
			"-A SKNtest-MASQ -s 10.42.0.0/24 -d 10.42.0.0/16 -m comment --comment \"pod to pod: no NAT\" -j RETURN",
			"-A SKNtest-MASQ -s 10.42.0.0/24 -m comment --comment \"pods leaving the cluster\" -j MASQUERADE",
		} {
			if !strings.Contains(nat, want) {
				return false, "lacks " + want + "\n" + nat
			}
		}
		return true, ""
	})

	// c leaves; b's route is removed by hand and comes back with the next change.
	netnstest.MustRun(t, "ip", "-n", ns, "route", "del", "10.42.1.0/24", "proto", "73", "metric", "4242")
	if err := client.CoreV1().Nodes().Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("c's route gone and b's back", func() (bool, string) {
		r := routes()
		return !strings.Contains(r, "10.42.2.0") && strings.Contains(r, "10.42.1.0/24 via "+sub+".3"), r
	})

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	done <- nil
	if r := strings.TrimSpace(routes()); r != "" {
		t.Errorf("routes left after stop:\n%s", r)
	}
	if nat := netnstest.MustRun(t, "ip", "netns", "exec", ns, "iptables", "-w", "-t", "nat", "-S"); strings.Contains(nat, "SKNtest") {
		t.Errorf("chain left after stop:\n%s", nat)
	}
}
