package openapi

import (
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	builderutil "k8s.io/kube-openapi/pkg/builder3/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/skiff-sh/skiff/internal/registry"
)

// CustomResourceDefinitionNames are the names kube-apiserver publishes a custom resource's schema
// and its list under: the group reversed, the version and the kind ("com.example.v1.Widget").
func CustomResourceDefinitionNames(gvk schema.GroupVersionKind, listKind string) (kind, list string) {
	parts := strings.Split(gvk.Group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	prefix := strings.Join(parts, ".") + "." + gvk.Version + "."
	return prefix + gvk.Kind, prefix + listKind
}

// withCustomResources returns d plus the definitions of the resources built at run time (the
// generated ones are shared, never changed).
func (d *definitionSet) withCustomResources(resources []*registry.Resource) (*definitionSet, error) {
	var custom []*registry.Resource
	for _, res := range resources {
		if res != nil && res.Objects != nil {
			custom = append(custom, res)
		}
	}
	if len(custom) == 0 {
		return d, nil
	}
	out := &definitionSet{v2: maps.Clone(d.v2), v3: maps.Clone(d.v3), dependencies: maps.Clone(d.dependencies)}
	for _, res := range custom {
		gvk := res.GroupVersionKind()
		kindName, listName := CustomResourceDefinitionNames(gvk, res.ListKind)
		var base spec.Schema
		if res.Objects.OpenAPISchema != nil {
			base = *res.Objects.OpenAPISchema
		} else {
			base = spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}},
				VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}}}
		}
		for _, form := range []struct {
			prefix string
			v2     bool
		}{{v2RefPrefix, true}, {v3RefPrefix, false}} {
			ref := func(name string) spec.Ref { return spec.MustCreateRef(form.prefix + name) }
			list := listSchema(gvk.GroupVersion().WithKind(res.ListKind), ref(kindName), ref)
			if form.v2 {
				// As kube-apiserver: a schema that keeps unknown fields at its root is published in
				// v2 as a bare object (kubectl's v2 validation would refuse the unknown fields
				// against any declared property); others lose what v2 cannot say.
				kind := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}},
					VendorExtensible: spec.VendorExtensible{Extensions: withKinds(nil, []schema.GroupVersionKind{gvk})}}
				if !preservesUnknownFields(&base) {
					kind = objectSchema(*toV2(&base), gvk, ref)
				}
				out.v2[kindName] = *pruneDefaults(&kind)
				out.v2[listName] = list
				continue
			}
			kind := objectSchema(base, gvk, ref)
			out.v3[kindName] = builderutil.WrapRefs(&kind)
			out.v3[listName] = builderutil.WrapRefs(&list)
		}
		out.dependencies[kindName] = []string{objectMetaName}
		out.dependencies[listName] = []string{listMetaName, kindName}
	}
	return out, nil
}

func stringProperty(desc string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, Description: desc}}
}

// objectSchema is the version's schema with the fields every object has, as kube-apiserver
// publishes it.
func objectSchema(base spec.Schema, gvk schema.GroupVersionKind, ref func(string) spec.Ref) spec.Schema {
	s := base
	s.Properties = maps.Clone(base.Properties)
	if s.Properties == nil {
		s.Properties = map[string]spec.Schema{}
	}
	s.Properties["apiVersion"] = stringProperty("APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources")
	s.Properties["kind"] = stringProperty("Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")
	s.Properties["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(objectMetaName), Description: objectMetadataDescription}}
	s.Extensions = withKinds(base.Extensions, []schema.GroupVersionKind{gvk})
	return s
}

func listSchema(gvk schema.GroupVersionKind, item spec.Ref, ref func(string) spec.Ref) spec.Schema {
	return spec.Schema{
		SchemaProps: spec.SchemaProps{
			Description: gvk.Kind + " is a list of " + strings.TrimSuffix(gvk.Kind, "List"),
			Type:        []string{"object"},
			Required:    []string{"items"},
			Properties: map[string]spec.Schema{
				"apiVersion": stringProperty("APIVersion defines the versioned schema of this representation of an object."),
				"kind":       stringProperty("Kind is a string value representing the REST resource this object represents."),
				"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(listMetaName)}},
				"items": {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Description: "List of " + strings.ToLower(strings.TrimSuffix(gvk.Kind, "List")) + "s.",
					Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: item}}}}},
			},
		},
		VendorExtensible: spec.VendorExtensible{Extensions: withKinds(nil, []schema.GroupVersionKind{gvk})},
	}
}

// objectMetadataDescription is the description kube-apiserver gives a custom resource's metadata
// (kubectl explain <resource>.metadata shows it).
const objectMetadataDescription = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"

func preservesUnknownFields(s *spec.Schema) bool {
	return boolExtension(s, "x-kubernetes-preserve-unknown-fields")
}

// toV2 drops what OpenAPI v2 (and kubectl's v2 validation) cannot take, as kube-apiserver does
// when it publishes a custom resource's schema in v2: allOf, anyOf, oneOf and not; a nullable
// value loses its type, items and properties; a value keeping unknown fields loses its items and
// properties (and an object its type); an array left without items loses its type; a nullable
// property is not required.
func toV2(s *spec.Schema) *spec.Schema {
	if s == nil {
		return nil
	}
	c := *s
	c.AllOf, c.AnyOf, c.OneOf, c.Not = nil, nil, nil, nil
	preserve := preservesUnknownFields(s)
	if c.Nullable || preserve {
		if c.Nullable {
			c.Type = nil
		}
		c.Nullable = false
		c.Items, c.Properties = nil, nil
	}
	if c.Properties != nil {
		c.Properties = make(map[string]spec.Schema, len(s.Properties))
		var required []string
		for _, name := range s.Required {
			if p, ok := s.Properties[name]; !ok || !p.Nullable {
				required = append(required, name)
			}
		}
		c.Required = required
		for k, p := range s.Properties {
			c.Properties[k] = *toV2(&p)
		}
	}
	if c.Items != nil && c.Items.Schema != nil {
		c.Items = &spec.SchemaOrArray{Schema: toV2(c.Items.Schema)}
	}
	if c.AdditionalProperties != nil && c.AdditionalProperties.Schema != nil {
		if c.AdditionalProperties.Schema.Nullable {
			c.Required = nil
		}
		c.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: toV2(c.AdditionalProperties.Schema)}
	}
	if c.Items == nil && c.Type.Contains("array") {
		c.Type = nil
	}
	if preserve && c.Type.Contains("object") {
		c.Type = nil
	}
	return &c
}

// CustomResourceTypeConverter gives server-side apply the schema of a resource built at run time,
// so that its x-kubernetes-list-type, list-map-keys and map-type shape how applies merge, as they
// do against kube-apiserver.
func (s *Service) CustomResourceTypeConverter(res *registry.Resource) (managedfields.TypeConverter, error) {
	defs, err := s.defs.withCustomResources([]*registry.Resource{res})
	if err != nil {
		return nil, err
	}
	kindName, _ := CustomResourceDefinitionNames(res.GroupVersionKind(), res.ListKind)
	names, err := defs.closure([]string{kindName})
	if err != nil {
		return nil, err
	}
	schemas := make(map[string]*spec.Schema, len(names))
	for _, name := range names {
		schemas[name] = defs.v3[name]
	}
	return managedfields.NewTypeConverter(schemas, false)
}
