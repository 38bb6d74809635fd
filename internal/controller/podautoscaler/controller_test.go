package podautoscaler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakescale "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
)

// fakeMapper knows Deployments only, after its first Reset when late is set (a kind that
// discovery learns about later, as a new CRD).
type fakeMapper struct {
	late   bool
	resets int
}

func (m *fakeMapper) RESTMappings(gk schema.GroupKind, _ ...string) ([]*apimeta.RESTMapping, error) {
	if gk != (schema.GroupKind{Group: "apps", Kind: "Deployment"}) || (m.late && m.resets == 0) {
		return nil, &apimeta.NoKindMatchError{GroupKind: gk}
	}
	return []*apimeta.RESTMapping{{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		GroupVersionKind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}}, nil
}

func (m *fakeMapper) Reset() { m.resets++ }

// staticMetrics gives every listed pod the same cpu usage.
type staticMetrics struct {
	milli int64
	err   error
}

func (s staticMetrics) ResourceMetric(_ context.Context, _ corev1.ResourceName, _ string, _ labels.Selector, _ string) (map[string]PodMetric, error) {
	if s.err != nil {
		return nil, s.err
	}
	out := map[string]PodMetric{}
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		out[name] = PodMetric{Value: s.milli, Timestamp: ctrltest.Epoch()}
	}
	return out, nil
}

func (staticMetrics) PodsMetric(context.Context, string, string, labels.Selector, labels.Selector) (map[string]PodMetric, error) {
	return nil, errors.New("not served")
}

func (staticMetrics) ObjectMetric(context.Context, string, string, autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, error) {
	return 0, errors.New("not served")
}

func (staticMetrics) ExternalMetric(context.Context, string, string, labels.Selector) ([]int64, error) {
	return nil, errors.New("not served")
}

type ctrlFixture struct {
	env    *ctrltest.Env
	scales *fakescale.FakeScaleClient
	mapper *fakeMapper
	c      *Controller
	// replicas is the Deployment's spec.replicas as /scale reports it.
	replicas int32
}

func newCtrlFixture(t *testing.T, metrics MetricsSource, mapper *fakeMapper) *ctrlFixture {
	t.Helper()
	hpa := newHPA(1, 10).cpu(50).obj()
	f := &ctrlFixture{env: ctrltest.NewEnv(hpa), scales: &fakescale.FakeScaleClient{}, mapper: mapper, replicas: 3}
	f.scales.AddReactor("get", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: f.replicas},
			Status: autoscalingv1.ScaleStatus{Replicas: f.replicas, Selector: "app=web"}}, nil
	})
	f.scales.AddReactor("update", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s := a.(clienttesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		f.replicas = s.Spec.Replicas
		return true, s, nil
	})
	ctrltest.Seed(t, f.env.Factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer(), hpa)
	for _, p := range readyPods(3) {
		// Times relative to the controller's clock: started and ready long ago.
		p.Status.StartTime.Time = ctrltest.Epoch().Add(-10 * time.Minute)
		p.Status.Conditions[0].LastTransitionTime.Time = ctrltest.Epoch().Add(-9 * time.Minute)
		ctrltest.Seed(t, f.env.Factory.Core().V1().Pods().Informer(), p)
	}
	c, err := New(f.env.Deps, Options{Scales: f.scales, Mapper: mapper, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	return f
}

// statusWrites returns the HPA status updates among the recorded writes, applying the last one
// to the informer's cache as the watch would.
func (f *ctrlFixture) statusWrites(t *testing.T) int {
	t.Helper()
	n := 0
	for _, a := range f.env.Writes() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
			ctrltest.Seed(t, f.env.Factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer(), a.(clienttesting.UpdateAction).GetObject())
		}
	}
	return n
}

func (f *ctrlFixture) scaleUpdates() []int32 {
	var out []int32
	for _, a := range f.scales.Actions() {
		if a.GetVerb() == "update" {
			out = append(out, a.(clienttesting.UpdateAction).GetObject().(*autoscalingv1.Scale).Spec.Replicas)
		}
	}
	f.scales.ClearActions()
	return out
}

func TestControllerRescalesThroughScale(t *testing.T) {
	f := newCtrlFixture(t, staticMetrics{milli: 1000}, &fakeMapper{})
	ctx := context.Background()
	if err := f.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{6}) {
		t.Errorf("scale updates %v, want [6]", got)
	}
	if n := f.statusWrites(t); n != 1 {
		t.Errorf("%d status writes, want 1", n)
	}
	events := f.env.Events()
	if len(events) != 1 || !strings.HasPrefix(events[0], "Normal SuccessfulRescale New size: 6; reason: cpu resource utilization") {
		t.Errorf("events %v", events)
	}
	if h := f.c.histories["ns/web"]; len(h.Recommendations) == 0 {
		t.Errorf("no recommendation remembered")
	}
	if f.c.loop.Queue.Len() != 0 {
		t.Errorf("the next sync should wait for the sync period, queue has %d", f.c.loop.Queue.Len())
	}

	// The HPA is deleted: its history is forgotten.
	if err := f.env.Factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Delete(newHPA(1, 10).obj()); err != nil {
		t.Fatal(err)
	}
	if err := f.c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.c.histories["ns/web"]; ok {
		t.Errorf("history of a deleted HPA kept")
	}
}

func TestControllerWritesStatusOnlyWhenChanged(t *testing.T) {
	f := newCtrlFixture(t, staticMetrics{milli: 500}, &fakeMapper{})
	ctx := context.Background()
	for i, want := range []int{1, 0, 0} {
		if err := f.c.sync(ctx, "ns/web"); err != nil {
			t.Fatal(err)
		}
		if n := f.statusWrites(t); n != want {
			t.Errorf("sync %d: %d status writes, want %d", i, n, want)
		}
		f.env.Clock.Step(DefaultSyncPeriod)
	}
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Errorf("scaled %v at target usage", got)
	}
}

func TestControllerReportsFailures(t *testing.T) {
	t.Run("metrics not served", func(t *testing.T) {
		f := newCtrlFixture(t, staticMetrics{err: errors.New("the server could not find the requested resource")}, &fakeMapper{})
		if err := f.c.reconcile(context.Background(), "ns/web", newHPA(1, 10).cpu(50).obj()); err == nil {
			t.Error("no error")
		}
		events := strings.Join(f.env.Events(), "\n")
		if !strings.Contains(events, "Warning FailedGetResourceMetric") || !strings.Contains(events, "Warning FailedComputeMetricsReplicas") {
			t.Errorf("events %s", events)
		}
	})
	t.Run("a kind discovery learns late is found after a reset", func(t *testing.T) {
		m := &fakeMapper{late: true}
		f := newCtrlFixture(t, staticMetrics{milli: 1000}, m)
		if err := f.c.reconcile(context.Background(), "ns/web", newHPA(1, 10).cpu(50).obj()); err != nil {
			t.Fatal(err)
		}
		if m.resets != 1 || !slices.Equal(f.scaleUpdates(), []int32{6}) {
			t.Errorf("resets %d", m.resets)
		}
	})
	t.Run("two HPAs on the same pods", func(t *testing.T) {
		f := newCtrlFixture(t, staticMetrics{milli: 500}, &fakeMapper{})
		ctx := context.Background()
		if err := f.c.reconcile(ctx, "ns/web", newHPA(1, 10).cpu(50).obj()); err != nil {
			t.Fatal(err)
		}
		second := newHPA(1, 10).cpu(50).obj()
		second.Name = "web2"
		if err := f.c.reconcile(ctx, "ns/web2", second); err == nil || !strings.Contains(err.Error(), "multiple HPAs: [ns/web ns/web2]") {
			t.Errorf("error %v, want an ambiguous selector", err)
		}
		if events := strings.Join(f.env.Events(), "\n"); !strings.Contains(events, "Warning AmbiguousSelector") {
			t.Errorf("events %s", events)
		}
	})
	t.Run("a failed rescale is reported", func(t *testing.T) {
		f := newCtrlFixture(t, staticMetrics{milli: 1000}, &fakeMapper{})
		f.scales.PrependReactor("update", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("conflict")
		})
		if err := f.c.reconcile(context.Background(), "ns/web", newHPA(1, 10).cpu(50).obj()); err == nil {
			t.Error("no error")
		}
		if events := strings.Join(f.env.Events(), "\n"); !strings.Contains(events, "Warning FailedRescale New size: 6") {
			t.Errorf("events %s", events)
		}
		if h := f.c.histories["ns/web"]; len(h.ScaleUps) != 0 {
			t.Errorf("scale event remembered after a failed rescale")
		}
	})
}
