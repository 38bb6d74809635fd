package podautoscaler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Upstream's fixed limits for an HPA without behavior: a scale-up at most doubles the replicas,
// and always allows at least 4.
const (
	scaleUpLimitFactor  = 2.0
	scaleUpLimitMinimum = 4.0
)

// Config holds the controller-wide tunables, with kube-controller-manager's flag defaults.
type Config struct {
	// Tolerance is --horizontal-pod-autoscaler-tolerance: a usage ratio within 1±Tolerance
	// does not scale (default 0.1).
	Tolerance float64
	// CPUInitializationPeriod is --horizontal-pod-autoscaler-cpu-initialization-period (default 5m).
	CPUInitializationPeriod time.Duration
	// InitialReadinessDelay is --horizontal-pod-autoscaler-initial-readiness-delay (default 30s).
	InitialReadinessDelay time.Duration
	// DownscaleStabilizationWindow is --horizontal-pod-autoscaler-downscale-stabilization (default 5m).
	DownscaleStabilizationWindow time.Duration
}

// Default fills unset fields with upstream's defaults.
func (c *Config) Default() {
	if c.Tolerance == 0 {
		c.Tolerance = 0.1
	}
	if c.CPUInitializationPeriod == 0 {
		c.CPUInitializationPeriod = 5 * time.Minute
	}
	if c.InitialReadinessDelay == 0 {
		c.InitialReadinessDelay = 30 * time.Second
	}
	if c.DownscaleStabilizationWindow == 0 {
		c.DownscaleStabilizationWindow = 5 * time.Minute
	}
}

// PodMetric is one pod's value of a metric, in milli-units.
type PodMetric struct {
	Value     int64
	Timestamp time.Time
	Window    time.Duration
}

// MetricValue is what the metrics APIs answered for one entry of spec.metrics.
type MetricValue struct {
	// Pods holds per-pod values (Resource, ContainerResource and Pods metrics), by pod name.
	Pods map[string]PodMetric
	// Value is an Object metric's value, in milli-units.
	Value int64
	// External holds an External metric's values, in milli-units (they are summed).
	External []int64
	// Err is set when the metric could not be fetched.
	Err error
}

// Recommendation is one past replica recommendation, for the stabilization windows.
type Recommendation struct {
	Replicas int32
	At       time.Time
}

// ScaleEvent is one past change of replicas, for the behavior policies' periods.
type ScaleEvent struct {
	Change int32
	At     time.Time
}

// History is what the controller remembers of one HPA between syncs (upstream keeps it in
// memory too, so a restart forgets it).
type History struct {
	Recommendations []Recommendation
	ScaleUps        []ScaleEvent
	ScaleDowns      []ScaleEvent
}

// Event is one Kubernetes Event to record on the HPA.
type Event struct {
	Type, Reason, Message string
}

// Input is everything Decide looks at.
type Input struct {
	HPA *autoscalingv2.HorizontalPodAutoscaler
	// Scale is the target's /scale; ScaleErr is set (and Scale nil) when it could not be read.
	Scale    *autoscalingv1.Scale
	ScaleErr error
	// Pods are the pods the scale's selector picks.
	Pods []*corev1.Pod
	// Metrics is aligned with HPA.Spec.Metrics.
	Metrics []MetricValue
	// OtherHPAs are the keys (namespace/name) of other HPAs whose targets' selectors pick some of
	// Pods; with any, the HPA refuses to scale (AmbiguousSelector), as upstream's does.
	OtherHPAs []string
	Now       time.Time
	History   History
	Config    Config
}

// Plan is what Decide wants done.
type Plan struct {
	// Rescale asks for /scale to be written with DesiredReplicas.
	Rescale         bool
	DesiredReplicas int32
	Reason          string
	// Status is the HPA status to write (when it differs from the current one) after a
	// successful rescale or when there is none.
	Status autoscalingv2.HorizontalPodAutoscalerStatus
	Events []Event
	// History replaces the HPA's history after a successful rescale or when there is none.
	History History
	// Err, when set, is reported and the HPA retried at the next sync.
	Err error

	// what RescaleFailed needs
	currentReplicas int32
	metricStatuses  []autoscalingv2.MetricStatus
	historyNoScale  History
	oldStatus       autoscalingv2.HorizontalPodAutoscalerStatus
	conditions      []autoscalingv2.HorizontalPodAutoscalerCondition
	now             time.Time
}

// RescaleFailed is the plan after writing /scale failed with err: no new scale event, the
// AbleToScale condition false and a FailedRescale event.
func (p Plan) RescaleFailed(err error) Plan {
	out := Plan{DesiredReplicas: p.DesiredReplicas, Reason: p.Reason, History: p.historyNoScale}
	conds := setCondition(p.conditions, p.now, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale",
		fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err))
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: p.currentReplicas, DesiredReplicas: p.oldStatus.DesiredReplicas,
		LastScaleTime: p.oldStatus.LastScaleTime, CurrentMetrics: p.metricStatuses, Conditions: conds,
	}
	out.Events = []Event{{corev1.EventTypeWarning, "FailedRescale",
		fmt.Sprintf("New size: %d; reason: %s; error: %v", p.DesiredReplicas, p.Reason, err)}}
	out.Err = fmt.Errorf("rescale to %d: %w", p.DesiredReplicas, err)
	return out
}

// decision carries the state of one Decide call.
type decision struct {
	in     Input
	hpa    *autoscalingv2.HorizontalPodAutoscaler
	conds  []autoscalingv2.HorizontalPodAutoscalerCondition
	events []Event
	hist   History
}

func (d *decision) setCondition(t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, message string) {
	d.conds = setCondition(d.conds, d.in.Now, t, status, reason, message)
}

func (d *decision) event(typ, reason, message string) {
	d.events = append(d.events, Event{typ, reason, message})
}

// Decide computes the replica count and the new status of one HPA, as upstream's controller
// does in one sync. It does not mutate its input.
func Decide(in Input) Plan {
	in.Config.Default()
	hpa := in.HPA
	d := &decision{in: in, hpa: hpa, hist: copyHistory(in.History)}
	d.conds = append([]autoscalingv2.HorizontalPodAutoscalerCondition(nil), hpa.Status.Conditions...)
	old := hpa.Status

	if in.ScaleErr != nil {
		d.event(corev1.EventTypeWarning, "FailedGetScale", in.ScaleErr.Error())
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale",
			fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", in.ScaleErr))
		st := *old.DeepCopy()
		st.Conditions = d.conds
		return Plan{Status: st, Events: d.events, History: d.hist, DesiredReplicas: old.DesiredReplicas,
			Err: fmt.Errorf("get scale of %s/%s: %w", hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name, in.ScaleErr)}
	}
	d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	current := in.Scale.Spec.Replicas
	if len(d.hist.Recommendations) == 0 {
		d.hist.Recommendations = []Recommendation{{current, in.Now}}
	}
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}

	plan := Plan{currentReplicas: current, oldStatus: old, now: in.Now}
	var desired int32
	var statuses []autoscalingv2.MetricStatus
	var retErr error
	rescale := true
	switch {
	case current == 0 && minReplicas != 0:
		rescale = false
		d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
	case current > hpa.Spec.MaxReplicas:
		plan.Reason = "Current number of replicas above Spec.MaxReplicas"
		desired = hpa.Spec.MaxReplicas
	case current < minReplicas:
		plan.Reason = "Current number of replicas below Spec.MinReplicas"
		desired = minReplicas
	default:
		metricDesired, metricName, sts, err := d.replicasForMetrics()
		statuses = sts
		if err != nil && metricDesired == -1 {
			d.event(corev1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error())
			return Plan{
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{
					CurrentReplicas: current, DesiredReplicas: old.DesiredReplicas, LastScaleTime: old.LastScaleTime,
					CurrentMetrics: statuses, Conditions: d.conds,
				},
				DesiredReplicas: old.DesiredReplicas, Events: d.events, History: d.hist,
				Err: fmt.Errorf("compute replicas from metrics: %w", err),
			}
		}
		retErr = err
		rescaleMetric := ""
		if metricDesired > desired {
			desired = metricDesired
			rescaleMetric = metricName
		}
		if desired > current {
			plan.Reason = fmt.Sprintf("%s above target", rescaleMetric)
		}
		if desired < current {
			plan.Reason = "All metrics below target"
		}
		if hpa.Spec.Behavior == nil {
			desired = d.normalize(current, desired, minReplicas)
		} else {
			desired = d.normalizeWithBehavior(current, desired, minReplicas)
		}
		rescale = desired != current
	}

	plan.historyNoScale = copyHistory(d.hist)
	plan.metricStatuses = statuses
	plan.conditions = append([]autoscalingv2.HorizontalPodAutoscalerCondition(nil), d.conds...)
	status := autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: current, LastScaleTime: old.LastScaleTime, CurrentMetrics: statuses,
	}
	if rescale {
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale",
			fmt.Sprintf("the HPA controller was able to update the target scale to %d", desired))
		d.event(corev1.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", desired, plan.Reason))
		d.storeScaleEvent(current, desired)
		now := metav1.NewTime(in.Now)
		status.LastScaleTime = &now
		status.DesiredReplicas = desired
	} else {
		desired = current
		status.DesiredReplicas = current
	}
	status.Conditions = d.conds
	plan.Rescale = rescale
	plan.DesiredReplicas = desired
	plan.Status = status
	plan.Events = d.events
	plan.History = d.hist
	plan.Err = retErr
	return plan
}

// replicasForMetrics is the highest proposal of all metrics; it returns -1 when every metric
// failed, or some failed and the others would scale down.
func (d *decision) replicasForMetrics() (int32, string, []autoscalingv2.MetricStatus, error) {
	specs := d.hpa.Spec.Metrics
	selector, err := d.selector()
	if err != nil {
		return -1, "", nil, err
	}
	specReplicas, statusReplicas := d.in.Scale.Spec.Replicas, d.in.Scale.Status.Replicas
	statuses := make([]autoscalingv2.MetricStatus, len(specs))
	var replicas int32
	var metric string
	invalid := 0
	var firstErr error
	var firstCond *autoscalingv2.HorizontalPodAutoscalerCondition
	for i, spec := range specs {
		var mv MetricValue
		if i < len(d.in.Metrics) {
			mv = d.in.Metrics[i]
		} else {
			mv.Err = errors.New("no metric was fetched")
		}
		proposal, name, reason, err := d.replicasForMetric(spec, mv, specReplicas, statusReplicas, selector, &statuses[i])
		if err != nil {
			d.event(corev1.EventTypeWarning, reason, err.Error())
			if invalid == 0 {
				firstErr = err
				firstCond = &autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse,
					Reason: reason, Message: fmt.Sprintf("the HPA was unable to compute the replica count: %v", err)}
			}
			invalid++
			continue
		}
		if replicas == 0 || proposal > replicas {
			replicas, metric = proposal, name
		}
	}
	if firstErr != nil {
		firstErr = fmt.Errorf("invalid metrics (%d invalid out of %d), first error is: %w", invalid, len(specs), firstErr)
	}
	if invalid >= len(specs) || (invalid > 0 && replicas < specReplicas) {
		if firstCond != nil {
			d.setCondition(firstCond.Type, firstCond.Status, firstCond.Reason, firstCond.Message)
		}
		if firstErr == nil {
			firstErr = errors.New("the HPA has no metrics")
		}
		return -1, "", statuses, firstErr
	}
	d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound",
		fmt.Sprintf("the HPA was able to successfully calculate a replica count from %s", metric))
	return replicas, metric, statuses, firstErr
}

func (d *decision) selector() (labels.Selector, error) {
	raw := d.in.Scale.Status.Selector
	if raw == "" {
		msg := "selector is required"
		d.event(corev1.EventTypeWarning, "SelectorRequired", msg)
		d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector")
		return nil, errors.New(msg)
	}
	sel, err := labels.Parse(raw)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		d.event(corev1.EventTypeWarning, "InvalidSelector", msg)
		d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", msg)
		return nil, errors.New(msg)
	}
	if len(d.in.OtherHPAs) > 0 {
		hpas := append([]string{d.hpa.Namespace + "/" + d.hpa.Name}, d.in.OtherHPAs...)
		slices.Sort(hpas)
		msg := fmt.Sprintf("pods by selector %s are controlled by multiple HPAs: %v", raw, hpas)
		d.event(corev1.EventTypeWarning, "AmbiguousSelector", msg)
		d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", msg)
		return nil, errors.New(msg)
	}
	return sel, nil
}

// replicasForMetric is one metric's proposal; on error it also returns the condition reason.
func (d *decision) replicasForMetric(spec autoscalingv2.MetricSpec, mv MetricValue, specReplicas, statusReplicas int32, selector labels.Selector,
	status *autoscalingv2.MetricStatus) (int32, string, string, error) {
	tol := d.tolerances()
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			return 0, "", "FailedGetResourceMetric", errors.New("resource metric source is missing")
		}
		n, vs, name, err := d.resourceReplicas(specReplicas, spec.Resource.Target, spec.Resource.Name, "", mv, tol)
		if err != nil {
			return 0, "", "FailedGetResourceMetric", fmt.Errorf("failed to get %s resource metric value: %w", spec.Resource.Name, err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Resource: &autoscalingv2.ResourceMetricStatus{Name: spec.Resource.Name, Current: vs}}
		return n, name, "", nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			return 0, "", "FailedGetContainerResourceMetric", errors.New("container resource metric source is missing")
		}
		n, vs, name, err := d.resourceReplicas(specReplicas, spec.ContainerResource.Target, spec.ContainerResource.Name, spec.ContainerResource.Container, mv, tol)
		if err != nil {
			return 0, "", "FailedGetContainerResourceMetric", fmt.Errorf("failed to get %s container metric value: %w", spec.ContainerResource.Container, err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: spec.ContainerResource.Name, Container: spec.ContainerResource.Container, Current: vs}}
		return n, name, "", nil
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil || spec.Pods.Target.AverageValue == nil {
			return 0, "", "FailedGetPodsMetric", errors.New("invalid pods metric source: no average value target")
		}
		if mv.Err != nil {
			return 0, "", "FailedGetPodsMetric", fmt.Errorf("failed to get pods metric value: unable to get metric %s: %w", spec.Pods.Metric.Name, mv.Err)
		}
		n, usage, err := d.plainReplicas(copyMetrics(mv.Pods), specReplicas, spec.Pods.Target.AverageValue.MilliValue(), "", tol)
		if err != nil {
			return 0, "", "FailedGetPodsMetric", fmt.Errorf("failed to get pods metric value: %w", err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Pods: &autoscalingv2.PodsMetricStatus{
			Metric:  spec.Pods.Metric,
			Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(usage, resource.DecimalSI)}}}
		return n, "pods metric " + spec.Pods.Metric.Name, "", nil
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object == nil {
			return 0, "", "FailedGetObjectMetric", errors.New("object metric source is missing")
		}
		if mv.Err != nil {
			return 0, "", "FailedGetObjectMetric", fmt.Errorf("failed to get object metric value: unable to get metric %s on %s %s: %w",
				spec.Object.Metric.Name, spec.Object.DescribedObject.Kind, spec.Object.DescribedObject.Name, mv.Err)
		}
		st := &autoscalingv2.ObjectMetricStatus{DescribedObject: spec.Object.DescribedObject, Metric: spec.Object.Metric}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Object: st}
		switch t := spec.Object.Target; {
		case t.Type == autoscalingv2.ValueMetricType && t.Value != nil:
			n, err := d.usageRatioReplicas(specReplicas, float64(mv.Value)/float64(t.Value.MilliValue()), tol)
			if err != nil {
				return 0, "", "FailedGetObjectMetric", fmt.Errorf("failed to get object metric value: %w", err)
			}
			st.Current.Value = resource.NewMilliQuantity(mv.Value, resource.DecimalSI)
			return n, fmt.Sprintf("%s metric %s", spec.Object.DescribedObject.Kind, spec.Object.Metric.Name), "", nil
		case t.Type == autoscalingv2.AverageValueMetricType && t.AverageValue != nil:
			n, avg := perPodReplicas(statusReplicas, mv.Value, t.AverageValue.MilliValue(), tol)
			st.Current.AverageValue = resource.NewMilliQuantity(avg, resource.DecimalSI)
			return n, fmt.Sprintf("%s metric %s", spec.Object.DescribedObject.Kind, spec.Object.Metric.Name), "", nil
		}
		*status = autoscalingv2.MetricStatus{}
		return 0, "", "FailedGetObjectMetric", errors.New("invalid object metric source: neither a value target nor an average value target was set")
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External == nil {
			return 0, "", "FailedGetExternalMetric", errors.New("external metric source is missing")
		}
		if mv.Err != nil {
			return 0, "", "FailedGetExternalMetric", fmt.Errorf("failed to get %s external metric value: %w", spec.External.Metric.Name, mv.Err)
		}
		var usage int64
		for _, v := range mv.External {
			usage += v
		}
		st := &autoscalingv2.ExternalMetricStatus{Metric: spec.External.Metric}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, External: st}
		name := fmt.Sprintf("external metric %s", spec.External.Metric.Name)
		switch t := spec.External.Target; {
		case t.AverageValue != nil:
			n, avg := perPodReplicas(statusReplicas, usage, t.AverageValue.MilliValue(), tol)
			st.Current.AverageValue = resource.NewMilliQuantity(avg, resource.DecimalSI)
			return n, name, "", nil
		case t.Value != nil:
			n, err := d.usageRatioReplicas(specReplicas, float64(usage)/float64(t.Value.MilliValue()), tol)
			if err != nil {
				return 0, "", "FailedGetExternalMetric", fmt.Errorf("failed to get %s external metric value: %w", spec.External.Metric.Name, err)
			}
			st.Current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
			return n, name, "", nil
		}
		*status = autoscalingv2.MetricStatus{}
		return 0, "", "FailedGetExternalMetric", errors.New("invalid external metric source: neither a value target nor an average value target was set")
	}
	return 0, "", "InvalidMetricSourceType", fmt.Errorf("unknown metric source type %q", spec.Type)
}

// resourceReplicas handles Resource and ContainerResource metrics: AverageValue against the raw
// per-pod average, AverageUtilization against the pods' requests.
func (d *decision) resourceReplicas(current int32, target autoscalingv2.MetricTarget, res corev1.ResourceName, container string, mv MetricValue,
	tol tolerances) (int32, autoscalingv2.MetricValueStatus, string, error) {
	if mv.Err != nil {
		return 0, autoscalingv2.MetricValueStatus{}, "", fmt.Errorf("unable to get metrics for resource %s: %w", res, mv.Err)
	}
	if target.AverageValue != nil {
		n, usage, err := d.plainReplicas(copyMetrics(mv.Pods), current, target.AverageValue.MilliValue(), res, tol)
		if err != nil {
			return 0, autoscalingv2.MetricValueStatus{}, "", fmt.Errorf("failed to get %s usage: %w", res, err)
		}
		return n, autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(usage, resource.DecimalSI)}, fmt.Sprintf("%s resource", res), nil
	}
	if target.AverageUtilization == nil {
		return 0, autoscalingv2.MetricValueStatus{}, "", errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	n, util, raw, err := d.utilizationReplicas(copyMetrics(mv.Pods), current, *target.AverageUtilization, res, container, tol)
	if err != nil {
		return 0, autoscalingv2.MetricValueStatus{}, "", fmt.Errorf("failed to get %s utilization: %w", res, err)
	}
	name := fmt.Sprintf("%s resource utilization (percentage of request)", res)
	if container != "" {
		name = fmt.Sprintf("%s container resource utilization (percentage of request)", res)
	}
	return n, autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: resource.NewMilliQuantity(raw, resource.DecimalSI)}, name, nil
}

type tolerances struct{ down, up float64 }

func (t tolerances) within(ratio float64) bool { return 1.0-t.down <= ratio && ratio <= 1.0+t.up }

func (d *decision) tolerances() tolerances {
	t := tolerances{d.in.Config.Tolerance, d.in.Config.Tolerance}
	if b := d.hpa.Spec.Behavior; b != nil {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}

// podGroups sorts the pods for one metric: ready ones counted, unready ones (pending, or for cpu
// still initializing) and those without a metric named; deleted and failed ones ignored.
type podGroups struct {
	ready                     int
	unready, missing, ignored map[string]bool
}

func (d *decision) groupPods(metrics map[string]PodMetric, res corev1.ResourceName) podGroups {
	g := podGroups{unready: map[string]bool{}, missing: map[string]bool{}, ignored: map[string]bool{}}
	cfg := d.in.Config
	for _, pod := range d.in.Pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed {
			g.ignored[pod.Name] = true
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			g.unready[pod.Name] = true
			continue
		}
		metric, ok := metrics[pod.Name]
		if !ok {
			g.missing[pod.Name] = true
			continue
		}
		if res == corev1.ResourceCPU {
			var cond *corev1.PodCondition
			for i := range pod.Status.Conditions {
				if pod.Status.Conditions[i].Type == corev1.PodReady {
					cond = &pod.Status.Conditions[i]
				}
			}
			unready := false
			switch {
			case cond == nil || pod.Status.StartTime == nil:
				unready = true
			case pod.Status.StartTime.Add(cfg.CPUInitializationPeriod).After(d.in.Now):
				// Within the initialization period: ignore an unready pod, or a sample that does
				// not cover a whole window since the last readiness change.
				unready = cond.Status == corev1.ConditionFalse || metric.Timestamp.Before(cond.LastTransitionTime.Add(metric.Window))
			default:
				// After it: ignore a pod that is unready and has never been ready.
				unready = cond.Status == corev1.ConditionFalse && pod.Status.StartTime.Add(cfg.InitialReadinessDelay).After(cond.LastTransitionTime.Time)
			}
			if unready {
				g.unready[pod.Name] = true
				continue
			}
		}
		g.ready++
	}
	return g
}

// podRequests sums each pod's requests of res (of one container, when container is set),
// counting restartable init containers (sidecars) as upstream does.
func (d *decision) podRequests(res corev1.ResourceName, container string) (map[string]int64, error) {
	out := make(map[string]int64, len(d.in.Pods))
	for _, pod := range d.in.Pods {
		containers := append([]corev1.Container{}, pod.Spec.Containers...)
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				containers = append(containers, c)
			}
		}
		var sum int64
		for _, c := range containers {
			if container != "" && container != c.Name {
				continue
			}
			q, ok := c.Resources.Requests[res]
			if !ok {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", res, c.Name, pod.Name)
			}
			sum += q.MilliValue()
		}
		out[pod.Name] = sum
	}
	return out, nil
}

func utilizationRatio(metrics map[string]PodMetric, requests map[string]int64, target int32) (float64, int32, int64, error) {
	var total, reqTotal int64
	n := 0
	for name, m := range metrics {
		r, ok := requests[name]
		if !ok {
			continue
		}
		total += m.Value
		reqTotal += r
		n++
	}
	if reqTotal == 0 {
		return 0, 0, 0, errors.New("no metrics returned matched known pods")
	}
	util := int32(total * 100 / reqTotal)
	return float64(util) / float64(target), util, total / int64(n), nil
}

func usageRatio(metrics map[string]PodMetric, target int64) (float64, int64) {
	var total int64
	for _, m := range metrics {
		total += m.Value
	}
	usage := total / int64(len(metrics))
	return float64(usage) / float64(target), usage
}

// utilizationReplicas is upstream's GetResourceReplicas.
func (d *decision) utilizationReplicas(metrics map[string]PodMetric, current, target int32, res corev1.ResourceName, container string,
	tol tolerances) (int32, int32, int64, error) {
	if len(d.in.Pods) == 0 {
		return 0, 0, 0, errors.New("no pods returned by selector while calculating replica count")
	}
	g := d.groupPods(metrics, res)
	removeMetrics(metrics, g.ignored)
	removeMetrics(metrics, g.unready)
	if len(metrics) == 0 {
		return 0, 0, 0, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	requests, err := d.podRequests(res, container)
	if err != nil {
		return 0, 0, 0, err
	}
	ratio, util, raw, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, 0, 0, err
	}
	scaleUpWithUnready := len(g.unready) > 0 && ratio > 1.0
	if !scaleUpWithUnready && len(g.missing) == 0 {
		if tol.within(ratio) {
			return current, util, raw, nil
		}
		return int32(math.Ceil(ratio * float64(g.ready))), util, raw, nil
	}
	// Assume the missing pods use 100% (or the target, if higher) of their request when
	// scaling down and nothing when scaling up; unready pods use nothing when scaling up.
	if len(g.missing) > 0 {
		for name := range g.missing {
			switch {
			case ratio < 1.0:
				metrics[name] = PodMetric{Value: requests[name] * int64(max(100, target)) / 100}
			case ratio > 1.0:
				metrics[name] = PodMetric{Value: 0}
			}
		}
	}
	if scaleUpWithUnready {
		for name := range g.unready {
			metrics[name] = PodMetric{Value: 0}
		}
	}
	newRatio, _, _, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, util, raw, err
	}
	return rebalanced(current, ratio, newRatio, len(metrics), tol), util, raw, nil
}

// rebalanced is the proposal after missing and unready pods were filled in: no change when the
// new ratio is within tolerance or flipped direction, or the proposal would move the other way.
func rebalanced(current int32, ratio, newRatio float64, n int, tol tolerances) int32 {
	if tol.within(newRatio) || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return current
	}
	proposal := int32(math.Ceil(newRatio * float64(n)))
	if (newRatio < 1.0 && proposal > current) || (newRatio > 1.0 && proposal < current) {
		return current
	}
	return proposal
}

// plainReplicas is upstream's calcPlainMetricReplicas: an average value target per pod.
func (d *decision) plainReplicas(metrics map[string]PodMetric, current int32, target int64, res corev1.ResourceName, tol tolerances) (int32, int64, error) {
	if len(d.in.Pods) == 0 {
		return 0, 0, errors.New("no pods returned by selector while calculating replica count")
	}
	g := d.groupPods(metrics, res)
	removeMetrics(metrics, g.ignored)
	removeMetrics(metrics, g.unready)
	if len(metrics) == 0 {
		return 0, 0, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	ratio, usage := usageRatio(metrics, target)
	scaleUpWithUnready := len(g.unready) > 0 && ratio > 1.0
	if !scaleUpWithUnready && len(g.missing) == 0 {
		if tol.within(ratio) {
			return current, usage, nil
		}
		return int32(math.Ceil(ratio * float64(g.ready))), usage, nil
	}
	for name := range g.missing {
		switch {
		case ratio < 1.0:
			metrics[name] = PodMetric{Value: target}
		case ratio > 1.0:
			metrics[name] = PodMetric{Value: 0}
		}
	}
	if scaleUpWithUnready {
		for name := range g.unready {
			metrics[name] = PodMetric{Value: 0}
		}
	}
	newRatio, _ := usageRatio(metrics, target)
	return rebalanced(current, ratio, newRatio, len(metrics), tol), usage, nil
}

// usageRatioReplicas scales the ready pods by ratio (Object and External Value targets).
func (d *decision) usageRatioReplicas(current int32, ratio float64, tol tolerances) (int32, error) {
	if current == 0 {
		return int32(math.Ceil(ratio)), nil
	}
	if tol.within(ratio) {
		return current, nil
	}
	if len(d.in.Pods) == 0 {
		return 0, errors.New("unable to calculate ready pods: no pods returned by selector while calculating replica count")
	}
	ready := 0
	for _, pod := range d.in.Pods {
		if pod.Status.Phase == corev1.PodRunning && isReady(pod) {
			ready++
		}
	}
	return int32(math.Ceil(ratio * float64(ready))), nil
}

// perPodReplicas is the AverageValue target of Object and External metrics: the total divided
// by the target per pod.
func perPodReplicas(statusReplicas int32, usage, target int64, tol tolerances) (int32, int64) {
	n := statusReplicas
	if statusReplicas == 0 || !tol.within(float64(usage)/(float64(target)*float64(statusReplicas))) {
		n = int32(math.Ceil(float64(usage) / float64(target)))
	}
	if statusReplicas == 0 {
		return n, usage
	}
	return n, int64(math.Ceil(float64(usage) / float64(statusReplicas)))
}

// OverlappingHPAs returns, sorted, the keys of the HPAs other than key whose last known selector
// (in selectors, by key) picks one of pods of key's namespace.
func OverlappingHPAs(key string, selectors map[string]labels.Selector, pods []*corev1.Pod) []string {
	var out []string
	for other, sel := range selectors {
		if other == key || sel == nil {
			continue
		}
		for _, p := range pods {
			if strings.HasPrefix(other, p.Namespace+"/") && sel.Matches(labels.Set(p.Labels)) {
				out = append(out, other)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func removeMetrics(metrics map[string]PodMetric, pods map[string]bool) {
	for name := range pods {
		delete(metrics, name)
	}
}

func copyMetrics(in map[string]PodMetric) map[string]PodMetric {
	out := make(map[string]PodMetric, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func copyHistory(h History) History {
	return History{
		Recommendations: append([]Recommendation(nil), h.Recommendations...),
		ScaleUps:        append([]ScaleEvent(nil), h.ScaleUps...),
		ScaleDowns:      append([]ScaleEvent(nil), h.ScaleDowns...),
	}
}

// setCondition returns conds with the condition of type t set; its transition time moves only
// when its status changes.
func setCondition(conds []autoscalingv2.HorizontalPodAutoscalerCondition, now time.Time, t autoscalingv2.HorizontalPodAutoscalerConditionType,
	status corev1.ConditionStatus, reason, message string) []autoscalingv2.HorizontalPodAutoscalerCondition {
	out := append([]autoscalingv2.HorizontalPodAutoscalerCondition(nil), conds...)
	i := -1
	for j := range out {
		if out[j].Type == t {
			i = j
			break
		}
	}
	if i < 0 {
		out = append(out, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t})
		i = len(out) - 1
	}
	if out[i].Status != status {
		out[i].LastTransitionTime = metav1.NewTime(now)
	}
	out[i].Status, out[i].Reason, out[i].Message = status, reason, message
	return out
}
