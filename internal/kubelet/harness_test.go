package kubelet

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/internal/kubelet/fakecri"
)

const (
	testNode  = "node-a"
	testImage = "localhost/busybox:local"
)

func testMachine() *MachineInfo {
	return &MachineInfo{
		CPUs: 4, MemoryBytes: 8 << 30, EphemeralBytes: 100 << 30, KernelVersion: "6.1.0-test", OSImage: "Debian GNU/Linux 12 (bookworm)",
		MachineID: "m-1", SystemUUID: "u-1", BootID: "b-1", Architecture: "amd64", OperatingSystem: "linux", PrimaryIP: "192.0.2.10",
	}
}

// harness runs a kubelet against a fake clientset and the in-memory
// runtime, with a fake clock.
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	runtime  *fakecri.Runtime
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	kubelet  *Kubelet
	cfg      Config
	cancel   context.CancelFunc
	done     chan struct{}

	eventsMu sync.Mutex
	events   []string
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	return newHarnessWithObjects(t, mutate)
}

func newHarnessWithObjects(t *testing.T, mutate func(*Config), objects ...runtime.Object) *harness {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	h := &harness{t: t, client: fake.NewClientset(objects...), clock: clk, recorder: record.NewFakeRecorder(10000)}
	// Like an API server, give created objects a UID when they have none.
	h.client.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if create, ok := action.(k8stesting.CreateAction); ok {
			if obj, ok := create.GetObject().(metav1.Object); ok && obj.GetUID() == "" {
				obj.SetUID(uuid.NewUUID())
			}
		}
		return false, nil, nil
	})
	h.runtime = fakecri.New(clk, testImage)
	h.cfg = Default(testNode, t.TempDir())
	h.cfg.Roles = []string{"worker"}
	if mutate != nil {
		mutate(&h.cfg)
	}
	h.start()
	return h
}

func (h *harness) start() {
	h.t.Helper()
	waitersBefore := h.clock.Waiters()
	k, err := New(h.cfg, Deps{
		Client: h.client, Runtime: h.runtime, Clock: h.clock, Recorder: h.recorder, Machine: testMachine(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.kubelet = k
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		if err := k.Run(ctx); err != nil && ctx.Err() == nil {
			h.t.Errorf("kubelet Run: %v", err)
		}
	}()
	h.t.Cleanup(h.stop)
	select {
	case <-k.Ready():
	case <-time.After(30 * time.Second):
		h.t.Fatal("kubelet not ready")
	}
	// The lease, node status, relist and housekeeping loops wait on the
	// clock before a test may step it.
	h.eventually("kubelet loops started", func() bool { return h.clock.Waiters() >= waitersBefore+4 })
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
}

// eventually polls cond until it holds; the kubelet works in goroutines,
// so tests wait for its effects instead of sleeping a fixed time.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// step advances the fake clock once the kubelet's loops wait on it.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.eventually("clock waiters", h.clock.HasWaiters)
	h.clock.Step(d)
}

// stepUntil advances the fake clock by d and waits a while for cond, again and again: a loop's
// ticker made after a step would never see it, and under load the harness cannot tell which
// loops have made theirs.
func (h *harness) stepUntil(what string, d time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h.step(d)
		for settle := time.Now().Add(500 * time.Millisecond); time.Now().Before(settle); time.Sleep(5 * time.Millisecond) {
			if cond() {
				return
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (h *harness) pod(namespace, name string) *corev1.Pod {
	h.t.Helper()
	pod, err := h.client.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return pod
}

func (h *harness) create(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	created, err := h.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return created
}

// waitPhase waits until the pod's status reports phase and returns it.
func (h *harness) waitPod(namespace, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	h.t.Helper()
	var last *corev1.Pod
	deadline := time.Now().Add(30 * time.Second)
	for {
		last = h.pod(namespace, name)
		if last != nil && cond(last) {
			return last
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; pod status: %+v", what, last.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitPodStepping is waitPod for conditions a crash-loop back-off may delay: while cond does not hold
// it advances the fake clock a second at a time (up to a back-off period), since a clock that never
// moves would never end the back-off.
func (h *harness) waitPodStepping(namespace, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	h.t.Helper()
	for i := 0; i < 12; i++ {
		if p := h.pod(namespace, name); p != nil && cond(p) {
			return p
		}
		time.Sleep(200 * time.Millisecond)
		h.step(time.Second)
	}
	return h.waitPod(namespace, name, what, cond)
}

func (h *harness) drainEvents() []string {
	h.eventsMu.Lock()
	defer h.eventsMu.Unlock()
	for {
		select {
		case e := <-h.recorder.Events:
			h.events = append(h.events, e)
		default:
			return append([]string(nil), h.events...)
		}
	}
}

func (h *harness) hasEvent(substr string) bool {
	for _, e := range h.drainEvents() {
		if strings.Contains(e, substr) {
			return true
		}
	}
	return false
}

// podBuilder builds test pods.
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:      testNode,
			RestartPolicy: corev1.RestartPolicyAlways,
			DNSPolicy:     corev1.DNSClusterFirst,
			Containers:    []corev1.Container{{Name: "app", Image: testImage, ImagePullPolicy: corev1.PullIfNotPresent}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		},
	}}
}

func (b *podBuilder) restartPolicy(p corev1.RestartPolicy) *podBuilder {
	b.pod.Spec.RestartPolicy = p
	return b
}

func (b *podBuilder) node(n string) *podBuilder {
	b.pod.Spec.NodeName = n
	return b
}

func (b *podBuilder) container(c corev1.Container) *podBuilder {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if c.Image == "" {
		c.Image = testImage
	}
	b.pod.Spec.Containers = []corev1.Container{c}
	return b
}

func (b *podBuilder) init(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: n, Image: testImage, ImagePullPolicy: corev1.PullIfNotPresent})
	}
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.pod }

func quantity(s string) resource.Quantity { return resource.MustParse(s) }

func statusOf(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == name {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

func conditionOf(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func podRunning(pod *corev1.Pod) bool { return pod.Status.Phase == corev1.PodRunning }
