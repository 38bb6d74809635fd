// Package autoscaling declares horizontalpodautoscalers (with /status) as autoscaling/v2, the
// stored version, and autoscaling/v1, served from the same storage through a hand-written
// conversion: v1's targetCPUUtilizationPercentage is a Resource cpu metric, and what v1 cannot
// express rides in the annotations Kubernetes uses for it. Defaults and validation follow
// Kubernetes. Autoscaling itself (the controller) is not here. It must not import the API server or
// storage; table printing lives in the printers package.
package autoscaling
