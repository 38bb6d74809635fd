package openapi

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

// KindSchema is the v3 schema of a served kind, built-in or custom, with every reference resolved in
// place and in the form skiff's CEL typing reads (a CustomResourceDefinition's schema type): what
// kube-apiserver's schema resolver gives the ValidatingAdmissionPolicy type checker. A reference back
// to a schema being resolved (JSONSchemaProps holds itself) becomes a bare object, as there. ok is
// false for a kind the documents do not have.
func (s *Service) KindSchema(gvk schema.GroupVersionKind) (*crdv1.JSONSchemaProps, bool) {
	s.mu.RLock()
	defs := s.pending.defs
	s.mu.RUnlock()
	for name, def := range defs.v3 {
		if hasKind(def.Extensions, gvk) {
			return resolvedSchema(defs.v3, &spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(v3RefPrefix + name)}}, map[string]bool{}), true
		}
	}
	return nil, false
}

// hasKind reports whether a definition's x-kubernetes-group-version-kind names gvk.
func hasKind(extensions spec.Extensions, gvk schema.GroupVersionKind) bool {
	kinds, _ := extensions[extensionGVK].([]interface{})
	for _, k := range kinds {
		m, _ := k.(map[string]interface{})
		if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
			return true
		}
	}
	return false
}

// resolvedSchema converts s, following its reference (a bare $ref, or the allOf of one that v3
// wraps a reference with siblings in) into defs. visiting holds the definitions being resolved on
// the way down. nil: a reference to no definition.
func resolvedSchema(defs map[string]*spec.Schema, s *spec.Schema, visiting map[string]bool) *crdv1.JSONSchemaProps {
	if name, ok := referenceOf(s); ok {
		if visiting[name] {
			return &crdv1.JSONSchemaProps{Type: "object"}
		}
		target, found := defs[name]
		if !found {
			return nil
		}
		visiting[name] = true
		defer delete(visiting, name)
		out := resolvedSchema(defs, target, visiting)
		if out != nil && s.Nullable {
			out.Nullable = true
		}
		return out
	}
	out := &crdv1.JSONSchemaProps{
		Format: s.Format, Required: s.Required, Nullable: s.Nullable,
		MaxItems: s.MaxItems, MaxLength: s.MaxLength, MaxProperties: s.MaxProperties,
		// Built-in types say int-or-string by format, custom resources by extension.
		XIntOrString:      s.Format == "int-or-string" || boolExtension(s, "x-kubernetes-int-or-string"),
		XEmbeddedResource: boolExtension(s, "x-kubernetes-embedded-resource"),
	}
	if len(s.Type) > 0 {
		out.Type = s.Type[0]
	}
	if preservesUnknownFields(s) {
		keep := true
		out.XPreserveUnknownFields = &keep
	}
	for _, e := range s.Enum {
		if raw, err := json.Marshal(e); err == nil {
			out.Enum = append(out.Enum, crdv1.JSON{Raw: raw})
		}
	}
	for name, prop := range s.Properties {
		if p := resolvedSchema(defs, &prop, visiting); p != nil {
			if out.Properties == nil {
				out.Properties = map[string]crdv1.JSONSchemaProps{}
			}
			out.Properties[name] = *p
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		if items := resolvedSchema(defs, s.Items.Schema, visiting); items != nil {
			out.Items = &crdv1.JSONSchemaPropsOrArray{Schema: items}
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		if values := resolvedSchema(defs, s.AdditionalProperties.Schema, visiting); values != nil {
			out.AdditionalProperties = &crdv1.JSONSchemaPropsOrBool{Allows: true, Schema: values}
		}
	}
	return out
}

// referenceOf is the definition name s refers to: its own $ref, or the one schema of its allOf.
func referenceOf(s *spec.Schema) (string, bool) {
	ref := s.Ref.String()
	if ref == "" && len(s.AllOf) == 1 {
		ref = s.AllOf[0].Ref.String()
	}
	if ref == "" {
		return "", false
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(strings.TrimPrefix(ref, v3RefPrefix)), true
}

func boolExtension(s *spec.Schema, name string) bool {
	v, _ := s.Extensions[name].(bool)
	return v
}
