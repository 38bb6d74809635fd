package openapi

import (
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The metrics.k8s.io/v1beta1 types come from k8s.io/metrics, which ships no OpenAPI definitions
// (metrics-server generates its own); these describe them as metrics-server publishes them.
const (
	nodeMetricsDefinition      = "io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics"
	nodeMetricsListDefinition  = "io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetricsList"
	podMetricsDefinition       = "io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics"
	podMetricsListDefinition   = "io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetricsList"
	containerMetricsDefinition = "io.k8s.metrics.pkg.apis.metrics.v1beta1.ContainerMetrics"
	timeDefinition             = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
	quantityDefinition         = "io.k8s.apimachinery.pkg.api.resource.Quantity"
)

func withMetrics(get getDefinitionsFunc) getDefinitionsFunc {
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := get(ref)
		usage := spec.Schema{SchemaProps: spec.SchemaProps{
			Type: []string{"object"}, Description: "The memory and CPU usage.",
			AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(quantityDefinition)}}},
		}}
		object := func(desc string, props map[string]spec.Schema, required []string, deps ...string) common.OpenAPIDefinition {
			props["apiVersion"] = stringProperty("APIVersion defines the versioned schema of this representation of an object.")
			props["kind"] = stringProperty("Kind is a string value representing the REST resource this object represents.")
			return common.OpenAPIDefinition{
				Schema:       spec.Schema{SchemaProps: spec.SchemaProps{Description: desc, Type: []string{"object"}, Properties: props, Required: required}},
				Dependencies: deps,
			}
		}
		list := func(desc, item string) common.OpenAPIDefinition {
			return object(desc, map[string]spec.Schema{
				"metadata": {SchemaProps: spec.SchemaProps{Ref: ref(listMetaName)}},
				"items": {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Description: "List of metrics.",
					Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(item)}}}}},
			}, []string{"items"}, listMetaName, item)
		}
		measured := func() map[string]spec.Schema {
			return map[string]spec.Schema{
				"metadata":  {SchemaProps: spec.SchemaProps{Ref: ref(objectMetaName)}},
				"timestamp": {SchemaProps: spec.SchemaProps{Ref: ref(timeDefinition), Description: "The following fields define time interval from which metrics were collected from the interval [Timestamp-Window, Timestamp]."}},
				"window":    stringProperty("The interval the usage was measured over (a duration)."),
			}
		}
		nodeProps := measured()
		nodeProps["usage"] = usage
		defs[nodeMetricsDefinition] = object("NodeMetrics sets resource usage metrics of a node.", nodeProps,
			[]string{"timestamp", "window", "usage"}, objectMetaName, timeDefinition, quantityDefinition)
		podProps := measured()
		podProps["containers"] = spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, Description: "Metrics for all containers are collected within the same time window.",
			Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(containerMetricsDefinition)}}}}}
		defs[podMetricsDefinition] = object("PodMetrics sets resource usage metrics of a pod.", podProps,
			[]string{"timestamp", "window", "containers"}, objectMetaName, timeDefinition, containerMetricsDefinition)
		defs[containerMetricsDefinition] = common.OpenAPIDefinition{
			Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Description: "ContainerMetrics sets resource usage metrics of a container.", Type: []string{"object"},
				Properties: map[string]spec.Schema{"name": stringProperty("Container name corresponding to the one from pod.spec.containers."), "usage": usage},
				Required:   []string{"name", "usage"},
			}},
			Dependencies: []string{quantityDefinition},
		}
		defs[nodeMetricsListDefinition] = list("NodeMetricsList is a list of NodeMetrics.", nodeMetricsDefinition)
		defs[podMetricsListDefinition] = list("PodMetricsList is a list of PodMetrics.", podMetricsDefinition)
		return defs
	}
}
