package openapi

import (
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The scheduling.skiff.sh/v1alpha1 types are skiff's own (internal/apis/schedulingexplainv1alpha1)
// and openapi-gen has no definitions for them. The spec is described field by field (kubectl
// validates what it creates); the status is computed and kept open.
const (
	podSchedulingExplanationDefinition     = "sh.skiff.scheduling.v1alpha1.PodSchedulingExplanation"
	podSchedulingExplanationListDefinition = "sh.skiff.scheduling.v1alpha1.PodSchedulingExplanationList"
)

func withSchedulingExplain(get getDefinitionsFunc) getDefinitionsFunc {
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := get(ref)
		open := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}},
			VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}}}
		specSchema := spec.Schema{SchemaProps: spec.SchemaProps{
			Type: []string{"object"}, Description: "The pod to explain and, optionally, the nodes to explain it on.",
			Required: []string{"podName"},
			Properties: map[string]spec.Schema{
				"podName": stringProperty("The pod, in the explanation's namespace."),
				"nodeNames": {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Description: "The nodes to answer for; every node when empty.",
					Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}}},
			},
		}}
		defs[podSchedulingExplanationDefinition] = common.OpenAPIDefinition{
			Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Description: "PodSchedulingExplanation asks why a pod does or does not fit the cluster's nodes: per node, each scheduler plugin's verdict. Create-only; nothing is stored.",
				Type:        []string{"object"},
				Required:    []string{"spec"},
				Properties: map[string]spec.Schema{
					"apiVersion": stringProperty("APIVersion defines the versioned schema of this representation of an object."),
					"kind":       stringProperty("Kind is a string value representing the REST resource this object represents."),
					"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(objectMetaName)}},
					"spec":       specSchema,
					"status":     withDescription(open, "The scheduler's per-node verdicts, computed by the API server."),
				},
			}},
			Dependencies: []string{objectMetaName},
		}
		defs[podSchedulingExplanationListDefinition] = listDefinition(ref, "PodSchedulingExplanationList is a list of PodSchedulingExplanations (never served).", "", podSchedulingExplanationDefinition)
		return defs
	}
}
