package netpol

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/skiff-sh/skiff/internal/netnstest"
	"github.com/skiff-sh/skiff/internal/proxy"
)

// listTable is the table's content as a sorted list of canonical JSON objects: nft lists chains
// in the order they were made and hash sets' elements in no fixed order, and handles differ
// between two tables of the same content, so those are normalised away; counters' values too.
func listTable(t *testing.T, h proxy.Host, table string) string {
	t.Helper()
	out, err := h.Output(context.Background(), "", "nft", "-j", "list", "table", "ip", table)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Nftables []map[string]any `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var objs []string
	for _, o := range doc.Nftables {
		if _, ok := o["metainfo"]; ok {
			continue
		}
		b, err := json.Marshal(canonical(o))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, string(b))
	}
	slices.Sort(objs)
	return strings.Join(objs, "\n")
}

// canonical drops handles and counter values and sorts element lists.
func canonical(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch k {
			case "handle", "packets", "bytes":
				continue
			case "elem":
				list, _ := e.([]any)
				var elems []string
				for _, el := range list {
					b, _ := json.Marshal(canonical(el))
					elems = append(elems, string(b))
				}
				slices.Sort(elems)
				out[k] = elems
				continue
			}
			out[k] = canonical(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	}
	return v
}

// TestPlanIncrementalEqualsFull walks a table through a series of changes with incremental
// plans in one namespace and writes each step whole in another: the kernel must accept every
// incremental transaction, and both tables must read the same after each step.
func TestPlanIncrementalEqualsFull(t *testing.T) {
	inc := proxy.Host{Wrap: []string{"ip", "netns", "exec", netnstest.New(t, "sknp", "nft")}}
	full := proxy.Host{Wrap: []string{"ip", "netns", "exec", netnstest.New(t, "sknp", "nft")}}
	const table = "skiff-netpol-test"
	ctx := context.Background()

	denyA := MakePolicy("a", "deny").Obj()
	web := MakePolicy("a", "web").Select("app", "web").Ingress(nil, named("http")).
		Ingress([]networkingv1.NetworkPolicyPeer{nsPeer("team", "x"), ipPeer("10.42.0.0/16", "10.42.0.9/32")}, tcp(80)).Obj()
	webNarrow := MakePolicy("a", "web").Select("app", "web").Ingress([]networkingv1.NetworkPolicyPeer{ipPeer("10.42.0.0/24", "10.42.0.8/29")}, tcp(81)).Obj()
	egressB := MakePolicy("b", "eg").Egress([]networkingv1.NetworkPolicyPeer{podPeer("app", "db"), nsPeer("team", "x")}, named("sql")).Obj()
	relabel := func(in Input) Input {
		in.Pods = append([]*corev1.Pod(nil), in.Pods...)
		in.Pods[1] = MakePod("a", "web2").Node("n1").IP("10.42.0.6").Label("app", "other").Obj()
		in.Namespaces = []*corev1.Namespace{ns("a", nil), ns("b", map[string]string{"team": "x"})}
		return in
	}
	steps := []struct {
		name string
		in   Input
	}{
		{"empty", world()},
		{"deny a", world(denyA)},
		{"web and egress", world(denyA, web, egressB)},
		{"relabel pod and namespaces", relabel(world(denyA, web, egressB))},
		{"narrow the web policy's block", relabel(world(denyA, webNarrow, egressB))},
		{"cluster network policies, all kinds of rules", func() Input {
			in := world(denyA, webNarrow)
			in.ClusterPolicies, in.Nodes = clusterPoliciesForTest()
			return in
		}()},
		{"cluster network policies changed", func() Input {
			in := world(denyA)
			in.ClusterPolicies, in.Nodes = clusterPoliciesForTest()
			in.ClusterPolicies = in.ClusterPolicies[1:]
			return in
		}()},
		{"log drops", func() Input { in := world(denyA, webNarrow); in.LogDrops = true; return in }()},
		{"all policies gone", world()},
	}
	var prev *Ruleset
	for _, s := range steps {
		next := Build(s.in)
		script, _ := Plan(table, prev, next)
		if err := inc.NftApply(ctx, script); err != nil {
			t.Fatalf("%s: incremental: %v\n%s", s.name, err, script)
		}
		whole, _ := Plan(table, nil, next)
		if err := full.NftApply(ctx, whole); err != nil {
			t.Fatalf("%s: full: %v\n%s", s.name, err, whole)
		}
		if a, b := listTable(t, inc, table), listTable(t, full, table); a != b {
			t.Fatalf("%s: incremental table differs from a full write\nincremental:\n%s\nfull:\n%s\nscript:\n%s", s.name, a, b, script)
		}
		if prev != nil {
			if again, changed := Plan(table, &next, next); changed {
				t.Fatalf("%s: no change planned %q", s.name, again)
			}
		}
		prev = &next
	}
}
