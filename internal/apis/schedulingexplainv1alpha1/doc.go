// Package schedulingexplainv1alpha1 declares the scheduling.skiff.sh/v1alpha1 types: the
// PodSchedulingExplanation review, whose status carries the scheduler's per-node verdicts for one
// pod. It holds types only (with their deep copies and OpenAPI names): no validation, no
// evaluation (internal/scheduler computes a status, internal/registry/schedulingexplain serves it).
package schedulingexplainv1alpha1
