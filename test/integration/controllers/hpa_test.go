package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/manager"
	"github.com/skiff-sh/skiff/internal/controller/podautoscaler"
)

// fakeMetrics answers resource metrics with one settable usage per pod, read from the live pods
// the selector picks; selectors of app=broken fail as an unserved metrics API does.
type fakeMetrics struct {
	client kubernetes.Interface
	mu     sync.Mutex
	milli  int64
}

func (f *fakeMetrics) set(milli int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.milli = milli
}

func (f *fakeMetrics) ResourceMetric(ctx context.Context, _ corev1.ResourceName, namespace string, selector labels.Selector, _ string) (map[string]podautoscaler.PodMetric, error) {
	if strings.Contains(selector.String(), "app=broken") {
		return nil, errors.New("the server could not find the requested resource (get pods.metrics.k8s.io)")
	}
	pods, err := f.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]podautoscaler.PodMetric{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			out[p.Name] = podautoscaler.PodMetric{Value: f.milli, Timestamp: time.Now(), Window: time.Second}
		}
	}
	return out, nil
}

func (f *fakeMetrics) PodsMetric(context.Context, string, string, labels.Selector, labels.Selector) (map[string]podautoscaler.PodMetric, error) {
	return nil, errors.New("custom.metrics.k8s.io is not served")
}

func (f *fakeMetrics) ObjectMetric(context.Context, string, string, autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, error) {
	return 0, errors.New("custom.metrics.k8s.io is not served")
}

func (f *fakeMetrics) ExternalMetric(context.Context, string, string, labels.Selector) ([]int64, error) {
	return nil, errors.New("external.metrics.k8s.io is not served")
}

// TestHorizontalPodAutoscaler runs the HPA controller in the test, on the real API server
// (whose own HPA controller is turned off) with a fake metrics source: an autoscaling/v1 HPA as
// `kubectl autoscale --cpu-percent=50 --min=1 --max=3` makes scales its Deployment up to
// maxReplicas through /scale under load and back down when the load ends; an HPA whose
// metrics fail and one whose target is missing report why in their conditions.
func TestHorizontalPodAutoscaler(t *testing.T) {
	e := startEnvArgs(t, 2, "--controllers", "*,-"+manager.HorizontalPodAutoscaling)
	ns := e.namespace(t, "hpa")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		<-done
	})
	metrics := &fakeMetrics{client: e.client, milli: 200} // 200% of a 100m request
	go func() {
		done <- manager.Run(ctx, manager.Config{
			Client: e.client, Controllers: []string{manager.HorizontalPodAutoscaling},
			LeaderElection: manager.LeaderElection{Disabled: true},
			Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
			HPA: manager.HPAConfig{RESTConfig: e.restConfig, Metrics: metrics, SyncPeriod: time.Second,
				DownscaleStabilization: 3 * time.Second},
		})
	}()

	for _, name := range []string{"web", "broken"} {
		d := newDeployment(ns, name, 1).obj()
		d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		_, err := e.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		must(t, err, "create deployment", name)
	}
	for _, target := range []string{"web", "broken", "missing"} {
		hpa := &autoscalingv1.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: target},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: target},
				MinReplicas:    ptr.To[int32](1), MaxReplicas: 3, TargetCPUUtilizationPercentage: ptr.To[int32](50),
			},
		}
		_, err := e.client.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{})
		must(t, err, "create hpa", target)
	}

	// Under load: 200% of a 50% target asks for 4x the replicas, capped at maxReplicas 3.
	waitFor(t, 90*time.Second, func() error {
		d, err := e.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if r := *d.Spec.Replicas; r > 3 {
			t.Fatalf("deployment scaled to %d, above maxReplicas 3", r)
		}
		h, err := e.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 3 || h.Status.CurrentReplicas != 3 || h.Status.LastScaleTime == nil {
			return fmt.Errorf("deployment replicas %d, hpa status %+v", *d.Spec.Replicas, h.Status)
		}
		if len(h.Status.CurrentMetrics) != 1 || h.Status.CurrentMetrics[0].Resource == nil ||
			ptr.Deref(h.Status.CurrentMetrics[0].Resource.Current.AverageUtilization, 0) != 200 {
			return fmt.Errorf("current metrics %+v, want cpu at 200%%", h.Status.CurrentMetrics)
		}
		return hasCondition(h, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
	})
	// The v1 view carries the utilization too (what `kubectl get hpa` prints as the target).
	v1hpa, err := e.client.AutoscalingV1().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
	must(t, err, "get v1 hpa")
	if ptr.Deref(v1hpa.Status.CurrentCPUUtilizationPercentage, 0) != 200 {
		t.Errorf("v1 currentCPUUtilizationPercentage %v, want 200", v1hpa.Status.CurrentCPUUtilizationPercentage)
	}
	waitFor(t, 30*time.Second, func() error { return hasEvent(ctx, e, ns, "web", "SuccessfulRescale") })

	// Failing metrics and a missing target: no scaling, and the conditions say why.
	waitFor(t, 30*time.Second, func() error {
		h, err := e.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "broken", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return hasCondition(h, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric")
	})
	waitFor(t, 30*time.Second, func() error { return hasEvent(ctx, e, ns, "broken", "FailedGetResourceMetric") })
	waitFor(t, 30*time.Second, func() error {
		h, err := e.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "missing", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return hasCondition(h, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale")
	})
	if d, err := e.client.AppsV1().Deployments(ns).Get(ctx, "broken", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 1 {
		t.Errorf("the deployment whose metrics fail was scaled: %v %v", err, d)
	}

	// The load ends: after the (shortened) downscale stabilization window, back to minReplicas.
	metrics.set(5)
	waitFor(t, 90*time.Second, func() error {
		d, err := e.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 1 {
			return fmt.Errorf("deployment replicas %d, want 1", *d.Spec.Replicas)
		}
		return nil
	})
}

func hasCondition(h *autoscalingv2.HorizontalPodAutoscaler, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason string) error {
	for _, c := range h.Status.Conditions {
		if c.Type == typ {
			if c.Status == status && c.Reason == reason {
				return nil
			}
			return fmt.Errorf("condition %s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
		}
	}
	return fmt.Errorf("no condition %s in %+v", typ, h.Status.Conditions)
}

func hasEvent(ctx context.Context, e *env, ns, hpa, reason string) error {
	events, err := e.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ev := range events.Items {
		if ev.InvolvedObject.Kind == "HorizontalPodAutoscaler" && ev.InvolvedObject.Name == hpa && ev.Reason == reason {
			return nil
		}
	}
	return fmt.Errorf("no %s event for hpa %s", reason, hpa)
}
