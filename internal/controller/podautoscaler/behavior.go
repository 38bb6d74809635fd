package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// normalize applies the rules of an HPA without behavior: the highest recommendation of the
// downscale stabilization window, then min/max replicas and the fixed scale-up limit.
func (d *decision) normalize(current, desired, minReplicas int32) int32 {
	stabilized := d.stabilize(desired)
	if stabilized != desired {
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation")
	} else {
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
	}
	out, reason, message := limitWithRules(current, stabilized, minReplicas, d.hpa.Spec.MaxReplicas)
	limited := corev1.ConditionFalse
	if out != stabilized {
		limited = corev1.ConditionTrue
	}
	d.setCondition(autoscalingv2.ScalingLimited, limited, reason, message)
	return out
}

// stabilize records desired and returns the highest recommendation within the downscale window.
func (d *decision) stabilize(desired int32) int32 {
	cutoff := d.in.Now.Add(-d.in.Config.DownscaleStabilizationWindow)
	highest := desired
	kept := d.hist.Recommendations[:0:0]
	for _, r := range d.hist.Recommendations {
		if r.At.Before(cutoff) {
			continue
		}
		highest = max(highest, r.Replicas)
		kept = append(kept, r)
	}
	d.hist.Recommendations = append(kept, Recommendation{desired, d.in.Now})
	return highest
}

func limitWithRules(current, desired, minReplicas, maxReplicas int32) (int32, string, string) {
	upLimit := int32(math.Max(scaleUpLimitFactor*float64(current), scaleUpLimitMinimum))
	maxAllowed, reason, message := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	if maxReplicas > upLimit {
		maxAllowed, reason, message = upLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	}
	switch {
	case desired < minReplicas:
		return minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case desired > maxAllowed:
		return maxAllowed, reason, message
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// rules are an HPA's behavior for one direction, with the API's defaults filled in for what
// is unset.
func (d *decision) rules() (up, down autoscalingv2.HPAScalingRules) {
	b := d.hpa.Spec.Behavior
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	up = autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptrInt32(0), SelectPolicy: &maxPolicy,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
	down = autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptrInt32(int32(d.in.Config.DownscaleStabilizationWindow / time.Second)), SelectPolicy: &maxPolicy,
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
	merge := func(dst *autoscalingv2.HPAScalingRules, src *autoscalingv2.HPAScalingRules) {
		if src == nil {
			return
		}
		if src.StabilizationWindowSeconds != nil {
			dst.StabilizationWindowSeconds = src.StabilizationWindowSeconds
		}
		if src.SelectPolicy != nil {
			dst.SelectPolicy = src.SelectPolicy
		}
		if len(src.Policies) > 0 {
			dst.Policies = src.Policies
		}
	}
	if b != nil {
		merge(&up, b.ScaleUp)
		merge(&down, b.ScaleDown)
	}
	return up, down
}

func ptrInt32(v int32) *int32 { return &v }

// normalizeWithBehavior applies spec.behavior: the stabilization windows of both directions,
// then the policies' rate limits and min/max replicas.
func (d *decision) normalizeWithBehavior(current, desired, minReplicas int32) int32 {
	up, down := d.rules()
	stabilized, reason, message := d.stabilizeWithBehavior(current, desired, up, down)
	if stabilized != desired {
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, reason, message)
	} else {
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
	}
	out, reason, message := d.limitWithBehavior(current, stabilized, minReplicas, d.hpa.Spec.MaxReplicas, up, down)
	limited := corev1.ConditionFalse
	if out != stabilized {
		limited = corev1.ConditionTrue
	}
	d.setCondition(autoscalingv2.ScalingLimited, limited, reason, message)
	return out
}

// stabilizeWithBehavior keeps the recommendation between the lowest one of the scale-up window
// and the highest one of the scale-down window, and records desired.
func (d *decision) stabilizeWithBehavior(current, desired int32, up, down autoscalingv2.HPAScalingRules) (int32, string, string) {
	now := d.in.Now
	upCutoff := now.Add(-time.Duration(*up.StabilizationWindowSeconds) * time.Second)
	downCutoff := now.Add(-time.Duration(*down.StabilizationWindowSeconds) * time.Second)
	upRec, downRec := desired, desired
	kept := d.hist.Recommendations[:0:0]
	for _, r := range d.hist.Recommendations {
		if r.At.After(upCutoff) {
			upRec = min(upRec, r.Replicas)
		}
		if r.At.After(downCutoff) {
			downRec = max(downRec, r.Replicas)
		}
		if r.At.Before(upCutoff) && r.At.Before(downCutoff) {
			continue
		}
		kept = append(kept, r)
	}
	d.hist.Recommendations = append(kept, Recommendation{desired, now})
	rec := max(current, upRec)
	rec = min(rec, downRec)
	if desired >= current {
		return rec, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return rec, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
}

func (d *decision) limitWithBehavior(current, desired, minReplicas, maxReplicas int32, up, down autoscalingv2.HPAScalingRules) (int32, string, string) {
	switch {
	case desired > current:
		limit := max(d.policyLimit(current, up, true), current)
		maxAllowed, reason, message := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if maxReplicas > limit {
			maxAllowed, reason, message = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if desired > maxAllowed {
			return maxAllowed, reason, message
		}
	case desired < current:
		limit := min(d.policyLimit(current, down, false), current)
		minAllowed, reason, message := minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if minReplicas < limit {
			minAllowed, reason, message = limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if desired < minAllowed {
			return minAllowed, reason, message
		}
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// changeInPeriod sums the changes of events within the last period seconds.
func (d *decision) changeInPeriod(periodSeconds int32, events []ScaleEvent) int32 {
	cutoff := d.in.Now.Add(-time.Duration(periodSeconds) * time.Second)
	var n int32
	for _, e := range events {
		if e.At.After(cutoff) {
			n += e.Change
		}
	}
	return n
}

// policyLimit is the bound one direction's policies allow now: the most replicas for a
// scale-up, the fewest for a scale-down, each policy counted from the replicas at the start of
// its period. selectPolicy Max takes the policy allowing the largest change, Min the smallest.
func (d *decision) policyLimit(current int32, r autoscalingv2.HPAScalingRules, up bool) int32 {
	if *r.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	highest := up == (*r.SelectPolicy != autoscalingv2.MinChangePolicySelect)
	result := int32(math.MaxInt32)
	if highest {
		result = math.MinInt32
	}
	for _, p := range r.Policies {
		start := current - d.changeInPeriod(p.PeriodSeconds, d.hist.ScaleUps) + d.changeInPeriod(p.PeriodSeconds, d.hist.ScaleDowns)
		var proposed int32
		switch {
		case p.Type == autoscalingv2.PodsScalingPolicy && up:
			proposed = start + p.Value
		case p.Type == autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case p.Type == autoscalingv2.PercentScalingPolicy && up:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		case p.Type == autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		if highest {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// storeScaleEvent remembers a rescale (only HPAs with behavior use them), forgetting events
// older than every policy period.
func (d *decision) storeScaleEvent(from, to int32) {
	if d.hpa.Spec.Behavior == nil || from == to {
		return
	}
	up, down := d.rules()
	var longest int32
	for _, p := range append(append([]autoscalingv2.HPAScalingPolicy(nil), up.Policies...), down.Policies...) {
		longest = max(longest, p.PeriodSeconds)
	}
	cutoff := d.in.Now.Add(-time.Duration(longest) * time.Second)
	prune := func(events []ScaleEvent) []ScaleEvent {
		kept := events[:0:0]
		for _, e := range events {
			if !e.At.Before(cutoff) {
				kept = append(kept, e)
			}
		}
		return kept
	}
	d.hist.ScaleUps, d.hist.ScaleDowns = prune(d.hist.ScaleUps), prune(d.hist.ScaleDowns)
	if to > from {
		d.hist.ScaleUps = append(d.hist.ScaleUps, ScaleEvent{to - from, d.in.Now})
	} else {
		d.hist.ScaleDowns = append(d.hist.ScaleDowns, ScaleEvent{from - to, d.in.Now})
	}
}
