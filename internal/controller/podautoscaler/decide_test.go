package podautoscaler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// hpaB builds an autoscaling/v2 HPA in tests.
type hpaB struct {
	h *autoscalingv2.HorizontalPodAutoscaler
}

func newHPA(minR, maxR int32) *hpaB {
	return &hpaB{&autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    &minR, MaxReplicas: maxR,
		},
	}}
}

func (b *hpaB) cpu(percent int32) *hpaB {
	b.h.Spec.Metrics = append(b.h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent}}})
	return b
}

func (b *hpaB) memAverage(q string) *hpaB {
	v := resource.MustParse(q)
	b.h.Spec.Metrics = append(b.h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}}})
	return b
}

func (b *hpaB) containerCPU(container string, percent int32) *hpaB {
	b.h.Spec.Metrics = append(b.h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType,
		ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceCPU, Container: container,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent}}})
	return b
}

func (b *hpaB) podsMetric(name, avg string) *hpaB {
	v := resource.MustParse(avg)
	b.h.Spec.Metrics = append(b.h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType,
		Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: name},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}}})
	return b
}

func (b *hpaB) objectMetric(name, value string) *hpaB {
	v := resource.MustParse(value)
	b.h.Spec.Metrics = append(b.h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType,
		Object: &autoscalingv2.ObjectMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: name},
			DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
			Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &v}}})
	return b
}

func (b *hpaB) externalAverage(name, avg string) *hpaB {
	v := resource.MustParse(avg)
	b.h.Spec.Metrics = append(b.h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType,
		External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: name},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}}})
	return b
}

func (b *hpaB) behavior(up, down *autoscalingv2.HPAScalingRules) *hpaB {
	b.h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: up, ScaleDown: down}
	return b
}

func (b *hpaB) obj() *autoscalingv2.HorizontalPodAutoscaler { return b.h }

func rules(window int32, sel autoscalingv2.ScalingPolicySelect, policies ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel, Policies: policies}
}

func pods(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: n, PeriodSeconds: period}
}

func percent(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: n, PeriodSeconds: period}
}

func scaleOf(spec, status int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: spec}, Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: "app=web"}}
}

// podB builds a pod that has run, ready, for ten minutes.
type podB struct{ p *corev1.Pod }

func newPod(name string) *podB {
	start := metav1.NewTime(now.Add(-10 * time.Minute))
	return &podB{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("100Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-9 * time.Minute))}}},
	}}
}

func (b *podB) pending() *podB {
	b.p.Status.Phase = corev1.PodPending
	b.p.Status.Conditions = nil
	return b
}

// started sets the start time ago before now and readiness (ready or not) since transitioned ago.
func (b *podB) started(ago time.Duration, ready bool, transitioned time.Duration) *podB {
	start := metav1.NewTime(now.Add(-ago))
	b.p.Status.StartTime = &start
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	b.p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(now.Add(-transitioned))}}
	return b
}

func (b *podB) sidecar(name, cpu string) *podB {
	always := corev1.ContainerRestartPolicyAlways
	b.p.Spec.InitContainers = append(b.p.Spec.InitContainers, corev1.Container{Name: name, RestartPolicy: &always,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}})
	return b
}

func (b *podB) deleted() *podB {
	t := metav1.NewTime(now)
	b.p.DeletionTimestamp = &t
	return b
}

func podList(bs ...*podB) []*corev1.Pod {
	var out []*corev1.Pod
	for _, b := range bs {
		out = append(out, b.p)
	}
	return out
}

// readyPods is n ready pods web-0..web-(n-1).
func readyPods(n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, newPod(fmt.Sprintf("web-%d", i)).p)
	}
	return out
}

// usage gives each named pod a fresh sample of milli units.
func usage(m map[string]int64) MetricValue {
	out := map[string]PodMetric{}
	for k, v := range m {
		out[k] = PodMetric{Value: v, Timestamp: now.Add(-10 * time.Second), Window: 30 * time.Second}
	}
	return MetricValue{Pods: out}
}

// each gives pods web-0..web-(n-1) the same usage.
func each(n int, milli int64) MetricValue {
	m := map[string]int64{}
	for i := range n {
		m[fmt.Sprintf("web-%d", i)] = milli
	}
	return usage(m)
}

// old is a history whose only recommendation has left every window, so nothing stabilizes.
func old(replicas int32) History {
	return History{Recommendations: []Recommendation{{replicas, now.Add(-time.Hour)}}}
}

type want struct {
	rescale  bool
	desired  int32
	reason   string            // of the rescale, when set
	conds    map[string]string // condition type -> "Status/Reason"
	events   []string          // event reasons, in order
	err      string            // substring of plan.Err
	utilized *int32            // status.currentMetrics[0] average utilization
}

func i32(v int32) *int32 { return &v }

func TestDecide(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want want
	}{{
		name: "cpu above target scales up by the usage ratio",
		in:   Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(3, 3), Pods: readyPods(3), Metrics: []MetricValue{each(3, 1000)}, History: old(3)},
		want: want{rescale: true, desired: 6, reason: "cpu resource utilization (percentage of request) above target", utilized: i32(100),
			conds:  map[string]string{"AbleToScale": "True/SucceededRescale", "ScalingActive": "True/ValidMetricFound", "ScalingLimited": "False/DesiredWithinRange"},
			events: []string{"SuccessfulRescale"}},
	}, {
		name: "without behavior a scale-up is capped at twice the replicas",
		in:   Input{HPA: newHPA(1, 20).cpu(10).obj(), Scale: scaleOf(3, 3), Pods: readyPods(3), Metrics: []MetricValue{each(3, 1000)}, History: old(3)},
		want: want{rescale: true, desired: 6, conds: map[string]string{"ScalingLimited": "True/ScaleUpLimit"}, events: []string{"SuccessfulRescale"}},
	}, {
		name: "a scale-up from one replica may go to four",
		in:   Input{HPA: newHPA(1, 20).cpu(10).obj(), Scale: scaleOf(1, 1), Pods: readyPods(1), Metrics: []MetricValue{each(1, 1000)}, History: old(1)},
		want: want{rescale: true, desired: 4, conds: map[string]string{"ScalingLimited": "True/ScaleUpLimit"}},
	}, {
		name: "maxReplicas caps the scale-up",
		in:   Input{HPA: newHPA(1, 5).cpu(20).obj(), Scale: scaleOf(3, 3), Pods: readyPods(3), Metrics: []MetricValue{each(3, 1000)}, History: old(3)},
		want: want{rescale: true, desired: 5, conds: map[string]string{"ScalingLimited": "True/TooManyReplicas"}},
	}, {
		name: "within the tolerance nothing changes",
		in:   Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 540)}, History: old(4)},
		want: want{desired: 4, utilized: i32(54), conds: map[string]string{"AbleToScale": "True/ReadyForNewScale", "ScalingActive": "True/ValidMetricFound"}},
	}, {
		name: "just past the tolerance scales",
		in:   Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 560)}, History: old(4)},
		want: want{rescale: true, desired: 5},
	}, {
		name: "a wider configured tolerance holds",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 560)}, History: old(4),
			Config: Config{Tolerance: 0.2}},
		want: want{desired: 4},
	}, {
		name: "below target scales down once the window's recommendations allow",
		in:   Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 100)}, History: old(4)},
		want: want{rescale: true, desired: 1, reason: "All metrics below target", conds: map[string]string{"AbleToScale": "True/SucceededRescale"}},
	}, {
		name: "the first sync records the current count, so a scale-down waits for the window",
		in:   Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 100)}},
		want: want{desired: 4, conds: map[string]string{"AbleToScale": "True/ScaleDownStabilized"}},
	}, {
		name: "a higher recommendation within the downscale window holds the count",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 100)},
			History: History{Recommendations: []Recommendation{{3, now.Add(-4 * time.Minute)}}}},
		want: want{rescale: true, desired: 3, conds: map[string]string{"AbleToScale": "True/SucceededRescale"}},
	}, {
		name: "a shorter configured downscale window lets the scale-down through",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 100)},
			History: History{Recommendations: []Recommendation{{4, now.Add(-2 * time.Minute)}}}, Config: Config{DownscaleStabilizationWindow: time.Minute}},
		want: want{rescale: true, desired: 1},
	}, {
		name: "minReplicas bounds a scale-down",
		in:   Input{HPA: newHPA(2, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 100)}, History: old(4)},
		want: want{rescale: true, desired: 2, conds: map[string]string{"ScalingLimited": "True/TooFewReplicas"}},
	}, {
		name: "below minReplicas the count is raised without metrics",
		in:   Input{HPA: newHPA(3, 10).cpu(50).obj(), Scale: scaleOf(1, 1), Pods: readyPods(1)},
		want: want{rescale: true, desired: 3, reason: "Current number of replicas below Spec.MinReplicas"},
	}, {
		name: "above maxReplicas the count is lowered without metrics",
		in:   Input{HPA: newHPA(1, 4).cpu(50).obj(), Scale: scaleOf(7, 7), Pods: readyPods(7)},
		want: want{rescale: true, desired: 4, reason: "Current number of replicas above Spec.MaxReplicas"},
	}, {
		name: "a target scaled to zero disables autoscaling",
		in:   Input{HPA: newHPA(1, 4).cpu(50).obj(), Scale: scaleOf(0, 0)},
		want: want{desired: 0, conds: map[string]string{"ScalingActive": "False/ScalingDisabled"}},
	}, {
		name: "no metrics: ScalingActive false with the metric's reason and no change",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(2, 2), Pods: readyPods(2),
			Metrics: []MetricValue{{Err: errors.New("the server could not find the requested resource")}}},
		want: want{desired: 0, conds: map[string]string{"AbleToScale": "True/SucceededGetScale", "ScalingActive": "False/FailedGetResourceMetric"},
			events: []string{"FailedGetResourceMetric", "FailedComputeMetricsReplicas"}, err: "could not find the requested resource"},
	}, {
		name: "one failed metric does not stop a scale-up the other asks for",
		in: Input{HPA: newHPA(1, 10).cpu(50).podsMetric("qps", "10").obj(), Scale: scaleOf(2, 2), Pods: readyPods(2),
			Metrics: []MetricValue{each(2, 1000), {Err: errors.New("custom.metrics.k8s.io is not served")}}, History: old(2)},
		want: want{rescale: true, desired: 4, events: []string{"FailedGetPodsMetric", "SuccessfulRescale"}, err: "invalid metrics (1 invalid out of 2)",
			conds: map[string]string{"ScalingActive": "True/ValidMetricFound"}},
	}, {
		name: "one failed metric stops a scale-down the other asks for",
		in: Input{HPA: newHPA(1, 10).cpu(50).podsMetric("qps", "10").obj(), Scale: scaleOf(4, 4), Pods: readyPods(4),
			Metrics: []MetricValue{each(4, 100), {Err: errors.New("custom.metrics.k8s.io is not served")}}, History: old(4)},
		want: want{desired: 0, conds: map[string]string{"ScalingActive": "False/FailedGetPodsMetric"}, err: "invalid metrics"},
	}, {
		name: "the highest proposal of several metrics wins",
		in: Input{HPA: newHPA(1, 10).cpu(50).memAverage("50Mi").obj(), Scale: scaleOf(2, 2), Pods: readyPods(2),
			Metrics: []MetricValue{each(2, 500), each(2, 100*1024*1024*1000)}, History: old(2)},
		want: want{rescale: true, desired: 4, reason: "memory resource above target"},
	}, {
		name: "pods missing metrics count as using nothing on a scale-up",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 1000, "web-1": 1000})}, History: old(4)},
		// 200% on two pods; with two at 0% the ratio is 1.0: no change.
		want: want{desired: 4, utilized: i32(100)},
	}, {
		name: "pods missing metrics count as using their whole request on a scale-down",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(5, 5), Pods: readyPods(5),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 100, "web-1": 100, "web-2": 100, "web-3": 100})}, History: old(5)},
		// (4x10% + 100%) / 5 = 28% of a 50% target: ceil(0.56 x 5) = 3.
		want: want{rescale: true, desired: 3},
	}, {
		name: "a missing pod that would flip the direction holds the count",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(3, 3), Pods: readyPods(3),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 300, "web-1": 300})}, History: old(3)},
		want: want{desired: 3},
	}, {
		name: "pending pods count as using nothing on a scale-up",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(3, 3), Pods: podList(newPod("web-0"), newPod("web-1"), newPod("web-2").pending()),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 1000, "web-1": 1000})}, History: old(3)},
		// (100+100+0)/3 = 66% -> ratio 1.32 -> ceil(3.96) = 4.
		want: want{rescale: true, desired: 4},
	}, {
		name: "pending pods are left out of a scale-down",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(3, 3), Pods: podList(newPod("web-0"), newPod("web-1"), newPod("web-2").pending()),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 100, "web-1": 100})}, History: old(3)},
		want: want{rescale: true, desired: 1},
	}, {
		name: "a cpu sample of a pod still initializing and unready is ignored",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(2, 2),
			Pods:    podList(newPod("web-0"), newPod("web-1").started(time.Minute, false, 50*time.Second)),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 500, "web-1": 5000})}, History: old(2)},
		want: want{desired: 2, utilized: i32(50)},
	}, {
		name: "a cpu sample not covering a window since the pod became ready is ignored",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(2, 2),
			Pods:    podList(newPod("web-0"), newPod("web-1").started(time.Minute, true, 20*time.Second)),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 500, "web-1": 5000})}, History: old(2)},
		want: want{desired: 2, utilized: i32(50)},
	}, {
		name: "a ready pod past its initialization counts",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(2, 2),
			Pods:    podList(newPod("web-0"), newPod("web-1").started(time.Minute, true, 50*time.Second)),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 500, "web-1": 1500})}, History: old(2)},
		want: want{rescale: true, desired: 4, utilized: i32(100)},
	}, {
		name: "after initialization a pod that went unready after being ready still counts",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(2, 2),
			Pods:    podList(newPod("web-0"), newPod("web-1").started(10*time.Minute, false, 2*time.Minute)),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 1000, "web-1": 1000})}, History: old(2)},
		want: want{rescale: true, desired: 4},
	}, {
		name: "unready pods do not matter for memory",
		in: Input{HPA: newHPA(1, 10).memAverage("50Mi").obj(), Scale: scaleOf(2, 2),
			Pods:    podList(newPod("web-0"), newPod("web-1").started(time.Minute, false, 50*time.Second)),
			Metrics: []MetricValue{each(2, 100*1024*1024*1000)}, History: old(2)},
		want: want{rescale: true, desired: 4},
	}, {
		name: "deleted pods are ignored",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(2, 2), Pods: podList(newPod("web-0"), newPod("web-1").deleted()),
			Metrics: []MetricValue{usage(map[string]int64{"web-0": 500, "web-1": 5000})}, History: old(2)},
		want: want{desired: 2},
	}, {
		name: "a pod without a cpu request makes utilization fail",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(1, 1),
			Pods: func() []*corev1.Pod {
				p := newPod("web-0").p
				p.Spec.Containers[0].Resources.Requests = nil
				return []*corev1.Pod{p}
			}(),
			Metrics: []MetricValue{each(1, 500)}},
		want: want{desired: 0, conds: map[string]string{"ScalingActive": "False/FailedGetResourceMetric"}, err: "missing request for cpu"},
	}, {
		name: "sidecars' requests count for utilization",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(1, 1), Pods: podList(newPod("web-0").sidecar("proxy", "1")),
			Metrics: []MetricValue{each(1, 1000)}, History: old(1)},
		want: want{desired: 1, utilized: i32(50)},
	}, {
		name: "container resource metrics use that container's request",
		in: Input{HPA: newHPA(1, 10).containerCPU("app", 50).obj(), Scale: scaleOf(1, 1), Pods: podList(newPod("web-0").sidecar("proxy", "1")),
			Metrics: []MetricValue{each(1, 1000)}, History: old(1)},
		want: want{rescale: true, desired: 2, utilized: i32(100), reason: "cpu container resource utilization (percentage of request) above target"},
	}, {
		name: "pods metric average value",
		in: Input{HPA: newHPA(1, 10).podsMetric("qps", "10").obj(), Scale: scaleOf(2, 2), Pods: readyPods(2),
			Metrics: []MetricValue{each(2, 30000)}, History: old(2)},
		want: want{rescale: true, desired: 4, reason: "pods metric qps above target"},
	}, {
		name: "object metric value scales the ready pods",
		in: Input{HPA: newHPA(1, 10).objectMetric("requests", "100").obj(), Scale: scaleOf(2, 2), Pods: readyPods(2),
			Metrics: []MetricValue{{Value: 300000}}, History: old(2)},
		want: want{rescale: true, desired: 4, reason: "Ingress metric requests above target"},
	}, {
		name: "external metric average value divides the total",
		in: Input{HPA: newHPA(1, 10).externalAverage("queue", "5").obj(), Scale: scaleOf(3, 3), Pods: readyPods(3),
			Metrics: []MetricValue{{External: []int64{20000, 10000}}}, History: old(3)},
		want: want{rescale: true, desired: 6},
	}, {
		name: "an unreadable scale sets AbleToScale false",
		in:   Input{HPA: newHPA(1, 10).cpu(50).obj(), ScaleErr: errors.New(`deployments.apps "web" not found`)},
		want: want{conds: map[string]string{"AbleToScale": "False/FailedGetScale"}, events: []string{"FailedGetScale"}, err: "not found"},
	}, {
		name: "a scale without a selector cannot be autoscaled",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 2}},
			Metrics: []MetricValue{each(2, 500)}},
		want: want{conds: map[string]string{"ScalingActive": "False/InvalidSelector"}, events: []string{"SelectorRequired", "FailedComputeMetricsReplicas"}, err: "selector is required"},
	}, {
		name: "pods also selected by another HPA are not autoscaled",
		in: Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(2, 2), Pods: readyPods(2), Metrics: []MetricValue{each(2, 1000)},
			OtherHPAs: []string{"ns/other"}, History: old(2)},
		want: want{conds: map[string]string{"ScalingActive": "False/AmbiguousSelector"}, events: []string{"AmbiguousSelector", "FailedComputeMetricsReplicas"},
			err: "controlled by multiple HPAs: [ns/other ns/web]"},
	}, {
		name: "behavior: a pods policy limits the scale-up rate",
		in: Input{HPA: newHPA(1, 10).cpu(50).behavior(rules(0, autoscalingv2.MaxChangePolicySelect, pods(1, 60)), nil).obj(),
			Scale: scaleOf(2, 2), Pods: readyPods(2), Metrics: []MetricValue{each(2, 1500)}, History: old(2)},
		want: want{rescale: true, desired: 3, conds: map[string]string{"ScalingLimited": "True/ScaleUpLimit"}},
	}, {
		name: "behavior: scale-ups within the policy period use up its budget",
		in: Input{HPA: newHPA(1, 10).cpu(50).behavior(rules(0, autoscalingv2.MaxChangePolicySelect, pods(1, 60)), nil).obj(),
			Scale: scaleOf(3, 3), Pods: readyPods(3), Metrics: []MetricValue{each(3, 1500)},
			History: History{Recommendations: old(2).Recommendations, ScaleUps: []ScaleEvent{{1, now.Add(-30 * time.Second)}}}},
		want: want{desired: 3, conds: map[string]string{"ScalingLimited": "True/ScaleUpLimit"}},
	}, {
		name: "behavior: scale-ups older than the period do not count",
		in: Input{HPA: newHPA(1, 10).cpu(50).behavior(rules(0, autoscalingv2.MaxChangePolicySelect, pods(1, 60)), nil).obj(),
			Scale: scaleOf(3, 3), Pods: readyPods(3), Metrics: []MetricValue{each(3, 1500)},
			History: History{Recommendations: old(2).Recommendations, ScaleUps: []ScaleEvent{{1, now.Add(-90 * time.Second)}}}},
		want: want{rescale: true, desired: 4},
	}, {
		name: "behavior: selectPolicy Max takes the larger of two policies",
		in: Input{HPA: newHPA(1, 100).cpu(10).behavior(rules(0, autoscalingv2.MaxChangePolicySelect, pods(2, 60), percent(50, 60)), nil).obj(),
			Scale: scaleOf(10, 10), Pods: readyPods(10), Metrics: []MetricValue{each(10, 1000)}, History: old(10)},
		want: want{rescale: true, desired: 15},
	}, {
		name: "behavior: selectPolicy Min takes the smaller of two policies",
		in: Input{HPA: newHPA(1, 100).cpu(10).behavior(rules(0, autoscalingv2.MinChangePolicySelect, pods(2, 60), percent(50, 60)), nil).obj(),
			Scale: scaleOf(10, 10), Pods: readyPods(10), Metrics: []MetricValue{each(10, 1000)}, History: old(10)},
		want: want{rescale: true, desired: 12},
	}, {
		name: "behavior: selectPolicy Disabled stops scale-down",
		in: Input{HPA: newHPA(1, 10).cpu(50).behavior(nil, rules(0, autoscalingv2.DisabledPolicySelect, percent(100, 15))).obj(),
			Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 100)}, History: old(4)},
		want: want{desired: 4, conds: map[string]string{"ScalingLimited": "True/ScaleDownLimit"}},
	}, {
		name: "behavior: a percent policy limits the scale-down rate",
		in: Input{HPA: newHPA(1, 20).cpu(50).behavior(nil, rules(0, autoscalingv2.MaxChangePolicySelect, percent(50, 60))).obj(),
			Scale: scaleOf(10, 10), Pods: readyPods(10), Metrics: []MetricValue{each(10, 50)}, History: old(10)},
		want: want{rescale: true, desired: 5, conds: map[string]string{"ScalingLimited": "True/ScaleDownLimit"}},
	}, {
		name: "behavior: selectPolicy Max on a scale-down takes the policy removing most",
		in: Input{HPA: newHPA(1, 20).cpu(50).behavior(nil, rules(0, autoscalingv2.MaxChangePolicySelect, pods(2, 60), percent(50, 60))).obj(),
			Scale: scaleOf(10, 10), Pods: readyPods(10), Metrics: []MetricValue{each(10, 50)}, History: old(10)},
		want: want{rescale: true, desired: 5},
	}, {
		name: "behavior: selectPolicy Min on a scale-down takes the policy removing least",
		in: Input{HPA: newHPA(1, 20).cpu(50).behavior(nil, rules(0, autoscalingv2.MinChangePolicySelect, pods(2, 60), percent(50, 60))).obj(),
			Scale: scaleOf(10, 10), Pods: readyPods(10), Metrics: []MetricValue{each(10, 50)}, History: old(10)},
		want: want{rescale: true, desired: 8},
	}, {
		name: "behavior: scale-downs within the period count against the scale-down budget",
		in: Input{HPA: newHPA(1, 20).cpu(50).behavior(nil, rules(0, autoscalingv2.MaxChangePolicySelect, pods(2, 60))).obj(),
			Scale: scaleOf(8, 8), Pods: readyPods(8), Metrics: []MetricValue{each(8, 50)},
			History: History{Recommendations: old(10).Recommendations, ScaleDowns: []ScaleEvent{{2, now.Add(-30 * time.Second)}}}},
		want: want{desired: 8, conds: map[string]string{"ScalingLimited": "True/ScaleDownLimit"}},
	}, {
		name: "behavior: the scale-up stabilization window keeps the lowest recent recommendation",
		in: Input{HPA: newHPA(1, 10).cpu(50).behavior(rules(60, autoscalingv2.MaxChangePolicySelect, percent(100, 15)), nil).obj(),
			Scale: scaleOf(2, 2), Pods: readyPods(2), Metrics: []MetricValue{each(2, 1500)},
			History: History{Recommendations: []Recommendation{{2, now.Add(-30 * time.Second)}}}},
		want: want{desired: 2, conds: map[string]string{"AbleToScale": "True/ScaleUpStabilized"}},
	}, {
		name: "behavior: the scale-down window defaults to the controller's (5m) when unset",
		in: Input{HPA: newHPA(1, 10).cpu(50).behavior(rules(0, autoscalingv2.MaxChangePolicySelect, percent(100, 15)), nil).obj(),
			Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 100)},
			History: History{Recommendations: []Recommendation{{4, now.Add(-4 * time.Minute)}}}},
		want: want{desired: 4, conds: map[string]string{"AbleToScale": "True/ScaleDownStabilized"}},
	}, {
		name: "behavior: a zero scale-down window scales down at once",
		in: Input{HPA: newHPA(1, 10).cpu(50).behavior(nil, rules(0, autoscalingv2.MaxChangePolicySelect, percent(100, 15))).obj(),
			Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 100)}},
		want: want{rescale: true, desired: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			before := tt.in.HPA.DeepCopy()
			plan := Decide(tt.in)
			if !equality.Semantic.DeepEqual(before, tt.in.HPA) {
				t.Fatal("Decide changed its input HPA")
			}
			w := tt.want
			if plan.Rescale != w.rescale || plan.DesiredReplicas != w.desired {
				t.Errorf("rescale %v to %d, want %v to %d (conditions %v)", plan.Rescale, plan.DesiredReplicas, w.rescale, w.desired, conds(plan.Status))
			}
			if w.reason != "" && plan.Reason != w.reason {
				t.Errorf("reason %q, want %q", plan.Reason, w.reason)
			}
			got := conds(plan.Status)
			for typ, sr := range w.conds {
				if got[typ] != sr {
					t.Errorf("condition %s = %q, want %q", typ, got[typ], sr)
				}
			}
			if w.events != nil {
				var reasons []string
				for _, e := range plan.Events {
					reasons = append(reasons, e.Reason)
				}
				if !slices.Equal(reasons, w.events) {
					t.Errorf("events %v, want %v", reasons, w.events)
				}
			}
			switch {
			case w.err == "" && plan.Err != nil:
				t.Errorf("unexpected error %v", plan.Err)
			case w.err != "" && (plan.Err == nil || !strings.Contains(plan.Err.Error(), w.err)):
				t.Errorf("error %v, want one containing %q", plan.Err, w.err)
			}
			if w.utilized != nil {
				if len(plan.Status.CurrentMetrics) == 0 {
					t.Fatalf("no current metrics in status")
				}
				m := plan.Status.CurrentMetrics[0]
				var u *int32
				if m.Resource != nil {
					u = m.Resource.Current.AverageUtilization
				} else if m.ContainerResource != nil {
					u = m.ContainerResource.Current.AverageUtilization
				}
				if u == nil || *u != *w.utilized {
					t.Errorf("current utilization %v, want %d", u, *w.utilized)
				}
			}
			if plan.Rescale {
				if plan.Status.LastScaleTime == nil || !plan.Status.LastScaleTime.Time.Equal(now) {
					t.Errorf("lastScaleTime %v, want now", plan.Status.LastScaleTime)
				}
				if plan.Status.DesiredReplicas != plan.DesiredReplicas {
					t.Errorf("status.desiredReplicas %d, want %d", plan.Status.DesiredReplicas, plan.DesiredReplicas)
				}
			}
			if tt.in.Scale != nil && tt.in.ScaleErr == nil && plan.Status.CurrentReplicas != tt.in.Scale.Spec.Replicas {
				t.Errorf("status.currentReplicas %d, want %d", plan.Status.CurrentReplicas, tt.in.Scale.Spec.Replicas)
			}
		})
	}
}

func conds(s autoscalingv2.HorizontalPodAutoscalerStatus) map[string]string {
	out := map[string]string{}
	for _, c := range s.Conditions {
		out[string(c.Type)] = string(c.Status) + "/" + c.Reason
	}
	return out
}

// TestDecideHistory checks what the plan remembers: recommendations for the windows and, with
// behavior, scale events for the policies' periods, old entries forgotten.
func TestDecideHistory(t *testing.T) {
	hpa := newHPA(1, 10).cpu(50).behavior(rules(0, autoscalingv2.MaxChangePolicySelect, pods(4, 60)), rules(120, autoscalingv2.MaxChangePolicySelect, percent(100, 60))).obj()
	in := Input{HPA: hpa, Scale: scaleOf(2, 2), Pods: readyPods(2), Metrics: []MetricValue{each(2, 1500)}, Now: now,
		History: History{
			Recommendations: []Recommendation{{2, now.Add(-time.Hour)}, {2, now.Add(-time.Minute)}},
			ScaleUps:        []ScaleEvent{{1, now.Add(-time.Hour)}},
		}}
	plan := Decide(in)
	if !plan.Rescale || plan.DesiredReplicas != 6 {
		t.Fatalf("rescale %v to %d, want to 6", plan.Rescale, plan.DesiredReplicas)
	}
	wantRecs := []Recommendation{{2, now.Add(-time.Minute)}, {6, now}}
	if !slices.Equal(plan.History.Recommendations, wantRecs) {
		t.Errorf("recommendations %v, want %v", plan.History.Recommendations, wantRecs)
	}
	if want := []ScaleEvent{{4, now}}; !slices.Equal(plan.History.ScaleUps, want) {
		t.Errorf("scale-ups %v, want %v", plan.History.ScaleUps, want)
	}
	if len(in.History.Recommendations) != 2 || len(in.History.ScaleUps) != 1 {
		t.Errorf("Decide changed its input history: %+v", in.History)
	}

	failed := plan.RescaleFailed(errors.New("conflict"))
	if slices.ContainsFunc(failed.History.ScaleUps, func(e ScaleEvent) bool { return e.At.Equal(now) }) {
		t.Errorf("a failed rescale remembered a scale event: %v", failed.History.ScaleUps)
	}
	if got := conds(failed.Status)["AbleToScale"]; got != "False/FailedUpdateScale" {
		t.Errorf("AbleToScale after a failed rescale = %q", got)
	}
	if failed.Status.LastScaleTime != nil || failed.Err == nil || len(failed.Events) != 1 || failed.Events[0].Reason != "FailedRescale" {
		t.Errorf("failed rescale plan: lastScaleTime %v, err %v, events %v", failed.Status.LastScaleTime, failed.Err, failed.Events)
	}
}

// TestConditionTransitionTime checks that a condition's transition time moves only when its
// status changes, so an unchanged HPA's status is not rewritten every sync.
func TestConditionTransitionTime(t *testing.T) {
	in := Input{HPA: newHPA(1, 10).cpu(50).obj(), Scale: scaleOf(4, 4), Pods: readyPods(4), Metrics: []MetricValue{each(4, 500)}, Now: now, History: old(4)}
	first := Decide(in)
	in.HPA.Status = first.Status
	in.History = first.History
	in.Now = now.Add(15 * time.Second)
	second := Decide(in)
	if !equality.Semantic.DeepEqual(first.Status, second.Status) {
		t.Errorf("a second sync with the same inputs changed the status:\n%+v\n%+v", first.Status, second.Status)
	}
}

func TestOverlappingHPAs(t *testing.T) {
	sel := func(s string) labels.Selector {
		l, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	selectors := map[string]labels.Selector{
		"ns/web":     sel("app=web"),
		"ns/all":     sel("app"),
		"ns/db":      sel("app=db"),
		"ns/nothing": labels.Nothing(),
		"other/web":  sel("app=web"),
	}
	pods := readyPods(2)
	if got, want := OverlappingHPAs("ns/web", selectors, pods), []string{"ns/all"}; !slices.Equal(got, want) {
		t.Errorf("overlapping %v, want %v", got, want)
	}
	delete(selectors, "ns/all")
	if got := OverlappingHPAs("ns/web", selectors, pods); len(got) != 0 {
		t.Errorf("overlapping %v, want none (other namespaces and selectors that miss do not count)", got)
	}
}
