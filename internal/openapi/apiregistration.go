package openapi

import (
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The apiregistration.k8s.io/v1 types are declared by skiff (k8s.io/kube-aggregator is not a
// dependency), so openapi-gen has no definitions for them. As for CustomResourceDefinitions, these
// give the top level; spec and status keep unknown fields and the server's validation judges.
const (
	apiServiceDefinition     = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"
	apiServiceListDefinition = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceList"
)

func withAPIRegistration(get getDefinitionsFunc) getDefinitionsFunc {
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := get(ref)
		open := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}},
			VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}}}
		defs[apiServiceDefinition] = common.OpenAPIDefinition{
			Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Description: "APIService represents a server for a particular GroupVersion. Name must be \"version.group\".",
				Type:        []string{"object"},
				Properties: map[string]spec.Schema{
					"apiVersion": stringProperty("APIVersion defines the versioned schema of this representation of an object."),
					"kind":       stringProperty("Kind is a string value representing the REST resource this object represents."),
					"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(objectMetaName)}},
					"spec":       withDescription(open, "Spec contains information for locating and communicating with a server"),
					"status":     withDescription(open, "Status contains derived information about an API server"),
				},
			}},
			Dependencies: []string{objectMetaName},
		}
		defs[apiServiceListDefinition] = listDefinition(ref, "APIServiceList is a list of APIService objects.", "Items is the list of APIService", apiServiceDefinition)
		return defs
	}
}
