package nodeipam

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

func TestAllocatorSubnets(t *testing.T) {
	tests := []struct {
		cidr  string
		mask  int
		index int64
		want  string
	}{
		{"10.244.0.0/16", 24, 0, "10.244.0.0/24"},
		{"10.244.0.0/16", 24, 5, "10.244.5.0/24"},
		{"10.244.0.0/16", 24, 255, "10.244.255.0/24"},
		{"10.0.0.0/8", 26, 5, "10.0.1.64/26"},
		{"fd00:10::/48", 64, 3, "fd00:10:0:3::/64"},
	}
	for _, tt := range tests {
		a, err := NewAllocator(tt.cidr, tt.mask)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Subnet(tt.index); got != tt.want {
			t.Errorf("%s /%d #%d = %s, want %s", tt.cidr, tt.mask, tt.index, got, tt.want)
		}
	}
	for _, bad := range []struct {
		cidr string
		mask int
	}{{"10.0.0.0/16", 8}, {"nonsense", 24}, {"10.0.0.0/24", 33}} {
		if _, err := NewAllocator(bad.cidr, bad.mask); err == nil {
			t.Errorf("%s /%d: want error", bad.cidr, bad.mask)
		}
	}
}

func node(name, cidr string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
}

func TestAssignsLowestFreeSubnet(t *testing.T) {
	nodes := []*corev1.Node{node("a", "10.244.0.0/24"), node("b", "10.244.2.0/24"), node("new", "")}
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	env := ctrltest.NewEnv(objs...)
	c, err := New(env.Deps, "10.244.0.0/16", 24)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		ctrltest.Seed(t, env.Factory.Core().V1().Nodes().Informer(), n)
	}
	for _, name := range []string{"a", "new"} {
		if err := c.Sync(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	actions := env.Writes()
	if got := ctrltest.Describe(actions); !slices.Equal(got, []string{"patch nodes new"}) {
		t.Fatalf("actions %q", got)
	}
	if p := string(actions[0].(clienttesting.PatchAction).GetPatch()); !strings.Contains(p, `"podCIDR":"10.244.1.0/24"`) {
		t.Fatalf("patch %s", p)
	}
}

func TestExhausted(t *testing.T) {
	nodes := []*corev1.Node{node("a", "10.0.0.0/25"), node("b", "10.0.0.128/25"), node("c", "")}
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	env := ctrltest.NewEnv(objs...)
	c, err := New(env.Deps, "10.0.0.0/24", 25)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		ctrltest.Seed(t, env.Factory.Core().V1().Nodes().Informer(), n)
	}
	if err := c.Sync(context.Background(), "c"); err == nil {
		t.Fatal("want an error when the cluster CIDR is full")
	}
	if ev := env.Events(); len(ev) != 1 || !strings.Contains(ev[0], "CIDRNotAvailable") {
		t.Fatalf("events %q", ev)
	}
}
