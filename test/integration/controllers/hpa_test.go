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

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

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
// maxReplicas through /scale under load and back down when the load ends; a StatefulSet and a
// custom resource with a scale subresource are scaled the same way; an HPA whose metrics fail and
// one whose target is missing report why in their conditions.
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
	dyn, err := dynamic.NewForConfig(e.restConfig)
	must(t, err, "dynamic client")
	createReplicatorCRD(ctx, t, dyn)
	// A StatefulSet and a custom resource are scaled through the same /scale client.
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/db:v1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			},
		},
	}
	_, err = e.client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	must(t, err, "create statefulset")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hpa.example.com/v1", "kind": "Replicator", "metadata": map[string]any{"name": "rep"},
		"spec": map[string]any{"replicas": int64(1)}, "status": map[string]any{},
	}}
	waitFor(t, 30*time.Second, func() error {
		_, err := dyn.Resource(replicatorsGVR).Namespace(ns).Create(ctx, cr, metav1.CreateOptions{})
		return err
	})
	for _, target := range []struct {
		apiVersion, kind, name string
		min, max               int32
	}{{"apps/v1", "StatefulSet", "db", 1, 2}, {"hpa.example.com/v1", "Replicator", "rep", 2, 4}} {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: target.name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: target.apiVersion, Kind: target.kind, Name: target.name},
				MinReplicas:    &target.min, MaxReplicas: target.max,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
			},
		}
		_, err := e.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{})
		must(t, err, "create hpa", target.name)
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

	// The StatefulSet scales to its maximum under load; the custom resource, below its
	// minReplicas, is raised to it through its /scale (its kind was added after the controller's
	// first discovery).
	waitFor(t, 60*time.Second, func() error {
		s, err := e.client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if *s.Spec.Replicas != 2 {
			return fmt.Errorf("statefulset replicas %d, want 2", *s.Spec.Replicas)
		}
		return nil
	})
	waitFor(t, 60*time.Second, func() error {
		u, err := dyn.Resource(replicatorsGVR).Namespace(ns).Get(ctx, "rep", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); n != 2 {
			h, _ := e.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "rep", metav1.GetOptions{})
			return fmt.Errorf("replicator spec.replicas %d, want 2; hpa conditions %+v", n, h.Status.Conditions)
		}
		return nil
	})

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

var replicatorsGVR = schema.GroupVersionResource{Group: "hpa.example.com", Version: "v1", Resource: "replicators"}

// createReplicatorCRD makes a namespaced custom resource with a scale subresource.
func createReplicatorCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	must(t, yaml.Unmarshal([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: replicators.hpa.example.com}
spec:
  group: hpa.example.com
  scope: Namespaced
  names: {plural: replicators, singular: replicator, kind: Replicator}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}}}
          status: {type: object, properties: {replicas: {type: integer}, selector: {type: string}}}
`), &crd.Object), "parse crd")
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	_, err := dyn.Resource(gvr).Create(ctx, crd, metav1.CreateOptions{})
	must(t, err, "create crd")
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

// TestHorizontalPodAutoscalerInServer checks the controller as skiff runs it: registered in the
// controller manager, under its identity and RBAC, it reads the target's /scale and, with no
// metrics API served, reports why it cannot scale instead of scaling.
func TestHorizontalPodAutoscalerInServer(t *testing.T) {
	e := startEnvArgs(t, 1, "--horizontal-pod-autoscaler-sync-period", "2s")
	ns := e.namespace(t, "hpa-server")
	ctx := context.Background()
	d := newDeployment(ns, "web", 1).obj()
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	_, err := e.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	must(t, err, "create deployment")
	_, err = e.client.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 3, TargetCPUUtilizationPercentage: ptr.To[int32](50),
		},
	}, metav1.CreateOptions{})
	must(t, err, "create hpa")
	// Below minReplicas it scales without metrics; then, with metrics.k8s.io not served, it
	// says so.
	waitFor(t, 60*time.Second, func() error {
		d, err := e.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 2 {
			return fmt.Errorf("deployment replicas %d, want minReplicas 2", *d.Spec.Replicas)
		}
		return nil
	})
	waitFor(t, 60*time.Second, func() error {
		h, err := e.client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, err := e.client.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1"); err == nil {
			// Served (once the metrics API is merged): simulated nodes report no usage, so only
			// the scale read is checked.
			return hasCondition(h, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale")
		}
		if err := hasCondition(h, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale"); err != nil {
			return err
		}
		return hasCondition(h, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric")
	})
}
