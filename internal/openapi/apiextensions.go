package openapi

import (
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The apiextensions.k8s.io/v1 types are declared by skiff (k8s.io/apiextensions-apiserver may not be
// a dependency), so openapi-gen has no definitions for them. These give the top level of the
// definition and its list; spec and status keep unknown fields, so server-side apply and kubectl's
// client-side validation accept every definition, and the server's own validation is the judge.
const (
	crdDefinition     = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
	crdListDefinition = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionList"
	objectMetaName    = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	listMetaName      = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
)

func withAPIExtensions(get getDefinitionsFunc) getDefinitionsFunc {
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := get(ref)
		open := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}},
			VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}}}
		defs[crdDefinition] = common.OpenAPIDefinition{
			Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Description: "CustomResourceDefinition represents a resource that should be exposed on the API server.  Its name MUST be in the format <.spec.name>.<.spec.group>.",
				Type:        []string{"object"},
				Required:    []string{"spec"},
				Properties: map[string]spec.Schema{
					"apiVersion": stringProperty("APIVersion defines the versioned schema of this representation of an object."),
					"kind":       stringProperty("Kind is a string value representing the REST resource this object represents."),
					"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(objectMetaName)}},
					"spec":       withDescription(open, "spec describes how the user wants the resources to appear"),
					"status":     withDescription(open, "status indicates the actual state of the CustomResourceDefinition"),
				},
			}},
			Dependencies: []string{objectMetaName},
		}
		defs[crdListDefinition] = listDefinition(ref, "CustomResourceDefinitionList is a list of CustomResourceDefinition objects.", "items list individual CustomResourceDefinition objects", crdDefinition)
		return defs
	}
}

func withDescription(s spec.Schema, desc string) spec.Schema {
	s.Description = desc
	return s
}

// listDefinition is the definition of a hand-written list kind as openapi-gen writes one:
// apiVersion, kind, list metadata and the items, each an item (a definition name).
func listDefinition(ref common.ReferenceCallback, description, itemsDescription, item string) common.OpenAPIDefinition {
	return common.OpenAPIDefinition{
		Schema: spec.Schema{SchemaProps: spec.SchemaProps{
			Description: description,
			Type:        []string{"object"},
			Required:    []string{"items"},
			Properties: map[string]spec.Schema{
				"apiVersion": stringProperty("APIVersion defines the versioned schema of this representation of an object."),
				"kind":       stringProperty("Kind is a string value representing the REST resource this object represents."),
				"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(listMetaName)}},
				"items": {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Description: itemsDescription,
					Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(item)}}}}},
			},
		}},
		Dependencies: []string{listMetaName, item},
	}
}
