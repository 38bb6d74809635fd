package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

// benchExplainer is an Explainer whose node cache holds nodes nodes (every fifth tainted) with ten
// running pods each, as the informers' events would fill it, and one pending pod "wants" (2 cpu).
func benchExplainer(b *testing.B, nodes int) *Explainer {
	b.Helper()
	cs := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(cs, 0)
	e, err := NewExplainer(cs, factory, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		n := st.MakeNode().Name(name).Capacity(st.Res{"cpu": "4", "memory": "16Gi", "pods": "110"})
		if i%5 == 0 {
			n = n.Taint("dedicated", "gpu", v1.TaintEffectNoSchedule)
		}
		e.cache.AddNode(n.Obj())
		for j := range 10 {
			e.cache.AddPod(st.MakePod().Name(fmt.Sprintf("run-%05d-%d", i, j)).UID(fmt.Sprintf("u-%d-%d", i, j)).Node(name).Req(st.Res{"cpu": "100m", "memory": "512Mi"}).Obj())
		}
	}
	podIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	pending := st.MakePod().Name("wants").Req(st.Res{"cpu": "2", "memory": "1Gi"}).Obj()
	pending.UID = types.UID("wants")
	if err := podIdx.Add(pending); err != nil {
		b.Fatal(err)
	}
	e.pods = corelisters.NewPodLister(podIdx)
	return e
}

// BenchmarkExplain5000Nodes: one explanation of a pending pod on 5,000 nodes and 50,000 running
// pods (what a PodSchedulingExplanation costs the API server); with-churn changes one node between
// answers, so the snapshot update copies it.
func BenchmarkExplain5000Nodes(b *testing.B) {
	e := benchExplainer(b, 5000)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		nodes []string
		churn bool
	}{
		{name: "all-nodes"},
		{name: "one-node", nodes: []string{"node-00001"}},
		{name: "all-nodes-with-churn", churn: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			var last []byte
			b.Cleanup(func() {
				// The size of the JSON answer the API server sends (outside the timed loop).
				b.ReportMetric(float64(len(last)), "answer-bytes")
			})
			for b.Loop() {
				if tc.churn {
					i++
					e.cache.AddPod(st.MakePod().Name(fmt.Sprintf("churn-%d", i)).UID(fmt.Sprintf("c-%d", i)).Node("node-00002").Req(st.Res{"cpu": "1m"}).Obj())
				}
				out, err := e.Explain(ctx, "default", "wants", tc.nodes)
				if err != nil {
					b.Fatal(err)
				}
				if out.TotalNodes != 5000 || out.FeasibleNodes != 4000 {
					b.Fatalf("total %d, feasible %d: %+v", out.TotalNodes, out.FeasibleNodes, out.Summary)
				}
				if last == nil {
					if last, err = json.Marshal(out); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
