package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	schedcache "github.com/skiff-sh/skiff/internal/scheduler/cache"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

// ledger is the authoritative cpu accounting, updated inside the fake
// client's reactors (which run serialized), so it is exact at every bind.
type ledger struct {
	mu         sync.Mutex
	alloc      map[string]int64 // current allocatable millicores
	prevAlloc  map[string]int64 // before the last change: the scheduler may not have seen a shrink yet
	used       map[string]int64
	podCPU     map[string]int64 // bound pod -> millicores
	violations []string
	binds      int
}

func (l *ledger) limit(node string) int64 { return max(l.alloc[node], l.prevAlloc[node]) }

func cpuOf(pod *v1.Pod) int64 { return framework.PodRequests(pod, false).MilliCPU }

func installLedger(cs *fake.Clientset, l *ledger, hub *st.WatchHub) {
	st.InstallBindingReactorWithHub(cs, func(pod *v1.Pod, node string) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		cpu := cpuOf(pod)
		if l.used[node]+cpu > l.limit(node) {
			l.violations = append(l.violations, fmt.Sprintf("%s on %s: used %dm + %dm > %dm", pod.Name, node, l.used[node], cpu, l.limit(node)))
		}
		l.used[node] += cpu
		l.podCPU[pod.Namespace+"/"+pod.Name] = cpu
		l.binds++
		return nil
	}, hub)
	cs.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		d := a.(clienttesting.DeleteAction)
		obj, err := cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		pod := obj.(*v1.Pod)
		l.mu.Lock()
		defer l.mu.Unlock()
		if cpu, ok := l.podCPU[d.GetNamespace()+"/"+d.GetName()]; ok {
			l.used[pod.Spec.NodeName] -= cpu
			delete(l.podCPU, d.GetNamespace()+"/"+d.GetName())
		}
		return false, nil, nil
	})
	cs.PrependReactor("update", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		node := a.(clienttesting.UpdateAction).GetObject().(*v1.Node)
		q := node.Status.Allocatable[v1.ResourceCPU]
		l.mu.Lock()
		defer l.mu.Unlock()
		l.prevAlloc[node.Name] = l.alloc[node.Name]
		l.alloc[node.Name] = q.MilliValue()
		return false, nil, nil
	})
}

// TestNoOvercommitUnderChurn schedules pods while bound pods are deleted and
// node allocatable grows and shrinks; every binding is checked against the
// exact usage at that instant. Without the assumed-pod cache, asynchronous
// binding overcommits here at once.
func TestNoOvercommitUnderChurn(t *testing.T) {
	const (
		numNodes = 40
		numPods  = 2000
		nodeCPU  = 2000
	)
	if testing.Short() {
		t.Skip("churn test skipped in -short")
	}
	// The plain object tracker: the managed-fields one (NewClientset) spends
	// most of this test in structured-merge-diff under the fake client's lock.
	cs := fake.NewSimpleClientset() //nolint:staticcheck // see above
	l := &ledger{alloc: map[string]int64{}, prevAlloc: map[string]int64{}, used: map[string]int64{}, podCPU: map[string]int64{}}
	hub := st.InstallBufferedWatches(cs)
	installLedger(cs, l, hub)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(cs, 0)
	one := int64(1)
	cfg := framework.DefaultConfiguration()
	cfg.PodInitialBackoffSeconds, cfg.PodMaxBackoffSeconds = &one, &one
	s, err := New(Config{Client: cs, Logger: quietLogger(), Configuration: cfg}, factory)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; s.Shutdown(); factory.Shutdown() }()

	for i := range numNodes {
		name := fmt.Sprintf("n%02d", i)
		l.mu.Lock()
		l.alloc[name], l.prevAlloc[name] = nodeCPU, nodeCPU
		l.mu.Unlock()
		create(t, cs, st.MakeNode().Name(name).Capacity(st.Res{"cpu": "2", "memory": "64Gi", "pods": "200"}).Obj())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	go func() {
		for i := range numPods {
			cpu := 100 + 50*rng.IntN(5)
			p := st.MakePod().Name(fmt.Sprintf("p%04d", i)).Req(st.Res{"cpu": resource.NewMilliQuantity(int64(cpu), resource.DecimalSI).String()}).Obj()
			if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
				t.Errorf("create: %v", err)
				return
			}
		}
	}()

	churnRng := rand.New(rand.NewPCG(3, 4))
	deleted := 0
	deadline := time.Now().Add(150 * time.Second)
	for {
		l.mu.Lock()
		bound, binds := len(l.podCPU), l.binds
		l.mu.Unlock()
		if binds+0 >= numPods && bound+deleted >= numPods {
			break
		}
		if time.Now().After(deadline) {
			a, b, u, g := s.Queue().Counts()
			cn, cp, ca := s.Cache().Counts()
			pods, _ := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			pending := 0
			for _, p := range pods.Items {
				if p.Spec.NodeName == "" {
					pending++
					if pending < 3 {
						t.Logf("pending %s: %+v", p.Name, p.Status.Conditions)
					}
				}
			}
			t.Fatalf("timed out: %d binds, %d bound, %d deleted of %d; queue a=%d b=%d u=%d g=%d; cache nodes=%d pods=%d assumed=%d; pending in API %d, total %d",
				binds, bound, deleted, numPods, a, b, u, g, cn, cp, ca, pending, len(pods.Items))
		}
		// Delete a few bound pods (frees room, and tests forgetting counted pods).
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var boundNames []string
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				boundNames = append(boundNames, p.Name)
			}
		}
		for k := 0; k < 8 && len(boundNames) > 0; k++ {
			name := boundNames[churnRng.IntN(len(boundNames))]
			if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err == nil {
				deleted++
			}
		}
		// Change one node's allocatable: grow, or shrink but never below what it runs.
		node, err := cs.CoreV1().Nodes().Get(ctx, fmt.Sprintf("n%02d", churnRng.IntN(numNodes)), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.mu.Lock()
		target := l.alloc[node.Name] + int64(churnRng.IntN(5)-2)*250
		target = min(max(target, l.used[node.Name], 500), 4000)
		l.mu.Unlock()
		node.Status.Allocatable[v1.ResourceCPU] = *resource.NewMilliQuantity(target, resource.DecimalSI)
		if _, err := cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // pace the churn so scheduling interleaves with it
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.violations) > 0 {
		t.Fatalf("%d overcommitting bindings, e.g. %v", len(l.violations), l.violations[:min(5, len(l.violations))])
	}
	t.Logf("%d binds, %d pods deleted during churn, no overcommit", l.binds, deleted)

	// Once quiet, the scheduler's cache agrees with the truth.
	waitFor(t, "cache converges", func() bool {
		snap := schedcache.NewEmptySnapshot()
		s.Cache().UpdateSnapshot(snap)
		for name, used := range l.used {
			ni, err := snap.Get(name)
			if err != nil || ni.Requested.MilliCPU != used {
				return false
			}
		}
		_, _, assumed := s.Cache().Counts()
		return assumed == 0
	})
}
