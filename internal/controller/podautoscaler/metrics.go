package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
)

// defaultMetricWindow is the window metrics-server reports, used when a custom metric has none.
const defaultMetricWindow = time.Minute

// MetricsSource reads metrics for the controller. Values are in milli-units.
type MetricsSource interface {
	// ResourceMetric is each pod's usage of resource (of one container when container is set;
	// else the sum of its containers), from metrics.k8s.io. Pods without a complete sample are
	// left out.
	ResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (map[string]PodMetric, error)
	// PodsMetric is each pod's value of a custom metric (custom.metrics.k8s.io).
	PodsMetric(ctx context.Context, metricName, namespace string, selector, metricSelector labels.Selector) (map[string]PodMetric, error)
	// ObjectMetric is one object's value of a custom metric (custom.metrics.k8s.io).
	ObjectMetric(ctx context.Context, metricName, namespace string, ref autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, error)
	// ExternalMetric is the values of an external metric (external.metrics.k8s.io).
	ExternalMetric(ctx context.Context, metricName, namespace string, metricSelector labels.Selector) ([]int64, error)
}

// RESTMetrics is the MetricsSource over the aggregated metrics APIs.
type RESTMetrics struct {
	resource resourceclient.PodMetricsesGetter
	custom   customclient.CustomMetricsClient
	apis     customclient.AvailableAPIsGetter
	external externalclient.ExternalMetricsClient
}

var _ MetricsSource = (*RESTMetrics)(nil)

// NewRESTMetrics builds the metrics clients from cfg; mapper resolves the kinds of Object metrics.
func NewRESTMetrics(cfg *rest.Config, disc discovery.DiscoveryInterface, mapper apimeta.RESTMapper) (*RESTMetrics, error) {
	res, err := resourceclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metrics.k8s.io client: %w", err)
	}
	ext, err := externalclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("external.metrics.k8s.io client: %w", err)
	}
	apis := customclient.NewAvailableAPIsGetter(disc)
	return &RESTMetrics{resource: res, custom: customclient.NewForConfig(cfg, mapper, apis), apis: apis, external: ext}, nil
}

// ResourceMetric implements MetricsSource.
func (m *RESTMetrics) ResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (map[string]PodMetric, error) {
	list, err := m.resource.PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, errors.New("no metrics returned from resource metrics API")
	}
	return podResourceMetrics(list.Items, resource, container), nil
}

// podResourceMetrics sums each pod's containers' usage (or takes the one container's); a pod
// missing the resource in any counted container is left out, as upstream does.
func podResourceMetrics(items []metricsv1beta1.PodMetrics, resource corev1.ResourceName, container string) map[string]PodMetric {
	out := make(map[string]PodMetric, len(items))
	for _, pm := range items {
		var sum int64
		found := false
		missing := len(pm.Containers) == 0
		for _, c := range pm.Containers {
			if container != "" && c.Name != container {
				continue
			}
			v, ok := c.Usage[resource]
			if !ok {
				missing = true
				break
			}
			sum += v.MilliValue()
			found = true
		}
		if missing || !found {
			continue
		}
		out[pm.Name] = PodMetric{Value: sum, Timestamp: pm.Timestamp.Time, Window: pm.Window.Duration}
	}
	return out
}

// PodsMetric implements MetricsSource.
func (m *RESTMetrics) PodsMetric(_ context.Context, metricName, namespace string, selector, metricSelector labels.Selector) (map[string]PodMetric, error) {
	list, err := m.custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, metricName, metricSelector)
	if err != nil {
		m.apis.Invalidate()
		return nil, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, errors.New("no metrics returned from custom metrics API")
	}
	out := make(map[string]PodMetric, len(list.Items))
	for _, v := range list.Items {
		window := defaultMetricWindow
		if v.WindowSeconds != nil {
			window = time.Duration(*v.WindowSeconds) * time.Second
		}
		out[v.DescribedObject.Name] = PodMetric{Value: v.Value.MilliValue(), Timestamp: v.Timestamp.Time, Window: window}
	}
	return out, nil
}

// ObjectMetric implements MetricsSource.
func (m *RESTMetrics) ObjectMetric(_ context.Context, metricName, namespace string, ref autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, error) {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var err error
	var value int64
	if gvk.Kind == "Namespace" && gvk.Group == "" {
		v, e := m.custom.RootScopedMetrics().GetForObject(gvk.GroupKind(), namespace, metricName, metricSelector)
		if err = e; e == nil {
			value = v.Value.MilliValue()
		}
	} else {
		v, e := m.custom.NamespacedMetrics(namespace).GetForObject(gvk.GroupKind(), ref.Name, metricName, metricSelector)
		if err = e; e == nil {
			value = v.Value.MilliValue()
		}
	}
	if err != nil {
		m.apis.Invalidate()
		return 0, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	return value, nil
}

// ExternalMetric implements MetricsSource.
func (m *RESTMetrics) ExternalMetric(_ context.Context, metricName, namespace string, metricSelector labels.Selector) ([]int64, error) {
	list, err := m.external.NamespacedMetrics(namespace).List(metricName, metricSelector)
	if err != nil {
		return nil, fmt.Errorf("unable to fetch metrics from external metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, errors.New("no metrics returned from external metrics API")
	}
	out := make([]int64, 0, len(list.Items))
	for _, v := range list.Items {
		out = append(out, v.Value.MilliValue())
	}
	return out, nil
}

// fetchMetrics asks source for the value of every metric of hpa (the I/O before Decide).
func fetchMetrics(ctx context.Context, source MetricsSource, hpa *autoscalingv2.HorizontalPodAutoscaler, selector labels.Selector) []MetricValue {
	out := make([]MetricValue, len(hpa.Spec.Metrics))
	for i, spec := range hpa.Spec.Metrics {
		mv := &out[i]
		switch spec.Type {
		case autoscalingv2.ResourceMetricSourceType:
			if spec.Resource != nil {
				mv.Pods, mv.Err = source.ResourceMetric(ctx, spec.Resource.Name, hpa.Namespace, selector, "")
			}
		case autoscalingv2.ContainerResourceMetricSourceType:
			if spec.ContainerResource != nil {
				mv.Pods, mv.Err = source.ResourceMetric(ctx, spec.ContainerResource.Name, hpa.Namespace, selector, spec.ContainerResource.Container)
			}
		case autoscalingv2.PodsMetricSourceType:
			if spec.Pods != nil {
				var ms labels.Selector
				if ms, mv.Err = metav1.LabelSelectorAsSelector(spec.Pods.Metric.Selector); mv.Err == nil {
					mv.Pods, mv.Err = source.PodsMetric(ctx, spec.Pods.Metric.Name, hpa.Namespace, selector, ms)
				}
			}
		case autoscalingv2.ObjectMetricSourceType:
			if spec.Object != nil {
				var ms labels.Selector
				if ms, mv.Err = metav1.LabelSelectorAsSelector(spec.Object.Metric.Selector); mv.Err == nil {
					mv.Value, mv.Err = source.ObjectMetric(ctx, spec.Object.Metric.Name, hpa.Namespace, spec.Object.DescribedObject, ms)
				}
			}
		case autoscalingv2.ExternalMetricSourceType:
			if spec.External != nil {
				var ms labels.Selector
				if ms, mv.Err = metav1.LabelSelectorAsSelector(spec.External.Metric.Selector); mv.Err == nil {
					mv.External, mv.Err = source.ExternalMetric(ctx, spec.External.Metric.Name, hpa.Namespace, ms)
				}
			}
		}
	}
	return out
}
