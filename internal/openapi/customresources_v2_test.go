package openapi

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/skiff-sh/skiff/internal/registry"
)

func typed(t string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{t}}}
}

func preserving(s spec.Schema) spec.Schema {
	s.Extensions = spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}
	return s
}

// TestToV2: what kube-apiserver drops from a custom resource's schema in OpenAPI v2.
func TestToV2(t *testing.T) {
	nullable := typed("object")
	nullable.Nullable = true
	nullable.Properties = map[string]spec.Schema{"x": typed("string")}
	in := typed("object")
	in.Required = []string{"a", "n"}
	in.Properties = map[string]spec.Schema{
		"a":    typed("string"),
		"n":    nullable,
		"any":  {SchemaProps: spec.SchemaProps{AnyOf: []spec.Schema{typed("integer"), typed("string")}}},
		"free": preserving(spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{"y": typed("string")}}}),
		"arr":  preserving(typed("array")),
	}
	out := toV2(&in)
	if !reflect.DeepEqual(out.Required, []string{"a"}) {
		t.Errorf("required %v: a nullable property stays required", out.Required)
	}
	if n := out.Properties["n"]; len(n.Type) != 0 || n.Properties != nil || n.Nullable {
		t.Errorf("nullable kept %+v", n)
	}
	if a := out.Properties["any"]; a.AnyOf != nil {
		t.Errorf("anyOf kept")
	}
	if f := out.Properties["free"]; len(f.Type) != 0 || f.Properties != nil || !preservesUnknownFields(&f) {
		t.Errorf("object keeping unknown fields: %+v", f)
	}
	if a := out.Properties["arr"]; len(a.Type) != 0 {
		t.Errorf("array without items kept its type: %+v", a)
	}
	if in.Properties["n"].Type == nil || len(in.Required) != 2 {
		t.Error("toV2 changed its input")
	}
}

// TestCustomResourceV2Forms: a schema keeping unknown fields at its root is a bare object in v2
// and whole in v3; metadata carries upstream's description in both.
func TestCustomResourceV2Forms(t *testing.T) {
	defs, err := buildDefinitions(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	open := preserving(typed("object"))
	open.Description = "kept in v3"
	res := &registry.Resource{GroupVersion: schema.GroupVersion{Group: "example.com", Version: "v1"}, Kind: "Widget", ListKind: "WidgetList",
		Plural: "widgets", Objects: &registry.ObjectHandling{OpenAPISchema: &open}}
	out, err := defs.withCustomResources([]*registry.Resource{res})
	if err != nil {
		t.Fatal(err)
	}
	v2 := out.v2["com.example.v1.Widget"]
	if v2.Description != "" || v2.Properties != nil || preservesUnknownFields(&v2) || !v2.Type.Contains("object") {
		t.Errorf("v2 form %+v", v2)
	}
	v3 := out.v3["com.example.v1.Widget"]
	if v3 == nil || v3.Description != "kept in v3" {
		t.Fatalf("v3 form %+v", v3)
	}
	meta := v3.Properties["metadata"]
	if meta.Description != objectMetadataDescription {
		t.Errorf("v3 metadata %+v", meta)
	}
}
