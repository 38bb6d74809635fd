package robustness

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/images"
	"github.com/skiff-sh/skiff/internal/simnode"
)

// The workload whose pods the control-plane invariants judge: a Deployment and a bare
// ReplicaSet, scaled and rolled during the run. Their pods run on the scenario's workers, real
// kubelets with containers; in a cluster of control planes alone, on simulated nodes (simulated
// kubelets make the pods Running and finish their graceful deletions without containers, so the
// scheduler, the ReplicaSet and Deployment controllers and the node lifecycle work as on real
// nodes).
const (
	workloadDeployment = "web"
	workloadReplicaSet = "bare"
	workloadNodeLabel  = "robustness.skiff.sh/workload"
	workloadMaxScale   = 5
)

// workloadStep is one change the driver makes.
type workloadStep struct {
	// Target is the Deployment or the ReplicaSet.
	Target string
	// Replicas is the new spec.replicas; Rollout changes the Deployment's pod template instead.
	Replicas int32
	Rollout  bool
}

// planWorkload picks the next change from a draw in [0,1) and a size draw in [0, workloadMaxScale].
func planWorkload(draw float64, size int) workloadStep {
	switch {
	case draw < 0.4:
		return workloadStep{Target: workloadDeployment, Replicas: int32(size)}
	case draw < 0.6:
		return workloadStep{Target: workloadDeployment, Rollout: true}
	default:
		return workloadStep{Target: workloadReplicaSet, Replicas: int32(size)}
	}
}

func podTemplate(app, revision string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}, Annotations: map[string]string{"robustness.skiff.sh/revision": revision}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{workloadNodeLabel: "true"},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			// The pause image every worker imports at start: nothing to pull.
			Containers: []corev1.Container{{Name: "c", Image: images.PauseImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
}

// Workload drives the Deployment and the ReplicaSet and records pods, ReplicaSets and
// kube-system's Leases.
type Workload struct {
	cs       kubernetes.Interface
	ns       string
	clk      clock.WithTicker
	logger   *slog.Logger
	sim      *simnode.Simulator
	recorder ObjectRecorder
	wg       sync.WaitGroup
	stop     context.CancelFunc
}

// StartWorkload labels the workers (the Nodes named) for the workload's pods, or starts two
// simulated nodes when there are none, then the recorders and the workload's objects in ns.
func StartWorkload(ctx context.Context, cs kubernetes.Interface, ns string, workers []string, clk clock.WithTicker, logger *slog.Logger) (*Workload, error) {
	w := &Workload{cs: cs, ns: ns, clk: clk, logger: logger}
	for _, name := range workers {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, workloadNodeLabel)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("label worker %s: %w", name, err)
		}
	}
	if len(workers) == 0 {
		sim, err := simnode.Start(ctx, simnode.Config{Client: cs, Nodes: 2, NamePrefix: "rb-sim-", Labels: map[string]string{workloadNodeLabel: "true"},
			HeartbeatInterval: 2 * time.Second, Clock: clk, Logger: quiet(logger)})
		if err != nil {
			return nil, fmt.Errorf("simulated nodes: %w", err)
		}
		w.sim = sim
	}
	rctx, stop := context.WithCancel(ctx)
	w.stop = stop
	for _, lw := range []listWatch{podsLW(cs, ns), replicaSetsLW(cs, ns), leasesLW(cs, metav1.NamespaceSystem)} {
		w.wg.Go(func() { w.recorder.Record(rctx, lw, time.Second, clk, logger) })
	}
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: workloadDeployment}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": workloadDeployment}},
		Template: podTemplate(workloadDeployment, "0"),
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
	}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: workloadReplicaSet}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": workloadReplicaSet}},
		Template: podTemplate(workloadReplicaSet, "0"),
	}}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		w.Stop()
		return nil, fmt.Errorf("create deployment: %w", err)
	}
	if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		w.Stop()
		return nil, fmt.Errorf("create replicaset: %w", err)
	}
	return w, nil
}

// Drive changes the workload every one to three seconds until ctx ends; failed changes are
// logged and skipped (the invariants judge what the controllers did, not the driver).
func (w *Workload) Drive(ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 77))
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-w.clk.After(time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))):
		}
		step := planWorkload(rng.Float64(), rng.IntN(workloadMaxScale+1))
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, step.Replicas)
		if step.Rollout {
			patch = fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"robustness.skiff.sh/revision":%q}}}}}`, strconv.Itoa(n))
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		if step.Target == workloadDeployment {
			_, err = w.cs.AppsV1().Deployments(w.ns).Patch(cctx, step.Target, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		} else {
			_, err = w.cs.AppsV1().ReplicaSets(w.ns).Patch(cctx, step.Target, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		}
		cancel()
		w.logger.Debug("workload step", "step", step, "err", err)
	}
}

// Stop ends the recorders and the simulated nodes and returns the record.
func (w *Workload) Stop() ([]ObjectVersion, []RecordGap) {
	w.stop()
	w.wg.Wait()
	if w.sim != nil {
		w.sim.Stop()
	}
	return w.recorder.Versions()
}

// quiet passes on only errors: the simulated kubelets warn at every call a fault makes fail.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(levelHandler{Handler: l.Handler(), min: slog.LevelError})
}

type levelHandler struct {
	slog.Handler
	min slog.Level
}

func (h levelHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }
