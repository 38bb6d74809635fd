package simnode

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// testEpoch is where every test's fake clock starts.
var testEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// podBuilder makes test pods: makePod("web").node("sim-node-0").containers("app").obj().
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers:    []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		},
	}}
}

func (b *podBuilder) node(name string) *podBuilder { b.pod.Spec.NodeName = name; return b }

func (b *podBuilder) label(key, value string) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[key] = value
	return b
}

func (b *podBuilder) containers(names ...string) *podBuilder {
	b.pod.Spec.Containers = nil
	for _, n := range names {
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: n, Image: "registry.example/" + n + ":1"})
	}
	return b
}

func (b *podBuilder) initContainer(name string, sidecar bool) *podBuilder {
	c := corev1.Container{Name: name, Image: "registry.example/" + name + ":1"}
	if sidecar {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, c)
	return b
}

func (b *podBuilder) deleting(at time.Time) *podBuilder {
	b.pod.DeletionTimestamp = &metav1.Time{Time: at}
	b.pod.DeletionGracePeriodSeconds = ptr.To[int64](30)
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.pod }

// harness is a simulator over a fake clientset and a fake clock.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	sim    *Simulator
}

func startHarness(t *testing.T, cfg Config, objects ...*corev1.Pod) *harness {
	t.Helper()
	h := &harness{t: t, client: fake.NewClientset(), clock: clocktesting.NewFakeClock(testEpoch)}
	// The fake clientset does not assign UIDs; an API server does, and Lease owner references need them.
	h.client.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if obj, ok := action.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && obj.GetUID() == "" {
			obj.SetUID(types.UID("uid-" + obj.GetName()))
		}
		return false, nil, nil
	})
	for _, p := range objects {
		if _, err := h.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Client, cfg.Clock = h.client, h.clock
	ctx, cancel := context.WithCancel(context.Background())
	sim, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("start simulator: %v", err)
	}
	t.Cleanup(func() { cancel(); sim.Stop() })
	h.sim = sim
	return h
}

func (h *harness) createPod(p *corev1.Pod) {
	h.t.Helper()
	if _, err := h.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// getPod returns the pod, or nil when it does not exist.
func (h *harness) getPod(name string) *corev1.Pod {
	h.t.Helper()
	p, err := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

// eventually polls cond until it holds, calling step before each try. Polling waits for the
// simulator's goroutines; the simulated time only moves through step.
func (h *harness) eventually(what string, step func(), cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if step != nil {
			step()
		}
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("timed out waiting until %s", what)
}

func podPhaseIs(h *harness, name string, phase corev1.PodPhase) func() bool {
	return func() bool {
		p := h.getPod(name)
		return p != nil && p.Status.Phase == phase
	}
}
