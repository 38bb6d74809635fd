package openapi

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/skiff-sh/skiff/internal/registry"
)

func TestKindSchema(t *testing.T) {
	svc, err := New(testScheme(t), testResources())
	if err != nil {
		t.Fatal(err)
	}
	d, ok := svc.KindSchema(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if !ok {
		t.Fatal("no schema for apps/v1 Deployment")
	}
	spec := d.Properties["spec"]
	checks := []struct{ what, got, want string }{
		{"spec.replicas", spec.Properties["replicas"].Type, "integer"},
		{"metadata.name", d.Properties["metadata"].Properties["name"].Type, "string"},
		{"metadata.creationTimestamp format", d.Properties["metadata"].Properties["creationTimestamp"].Format, "date-time"},
		{"containers items", spec.Properties["template"].Properties["spec"].Properties["containers"].Items.Schema.Properties["image"].Type, "string"},
		{"labels values", d.Properties["metadata"].Properties["labels"].AdditionalProperties.Schema.Type, "string"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if !spec.Properties["strategy"].Properties["rollingUpdate"].Properties["maxSurge"].XIntOrString {
		t.Error("maxSurge is not int-or-string")
	}
	if _, ok := svc.KindSchema(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Nothing"}); ok {
		t.Error("a schema for a kind that does not exist")
	}
}

// A custom resource's schema is found once the resource is served; a schema that refers back to
// itself ends in a bare object instead of recursing.
func TestKindSchemaCustomResourceAndCycles(t *testing.T) {
	svc, err := New(testScheme(t), testResources())
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}
	open := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
		"spec": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
			"replicas": {SchemaProps: spec.SchemaProps{Type: []string{"integer"}}},
		}}},
	}}}
	res := &registry.Resource{GroupVersion: gvk.GroupVersion(), Kind: gvk.Kind, ListKind: "CronTabList", Plural: "crontabs", Namespaced: true,
		New:     func() runtime.Object { return &unstructured.Unstructured{} },
		NewList: func() runtime.Object { return &unstructured.UnstructuredList{} },
		Verbs:   []string{"get", "list"},
		Objects: &registry.ObjectHandling{OpenAPISchema: &open}}
	if err := svc.Update(append(testResources(), res)); err != nil {
		t.Fatal(err)
	}
	d, ok := svc.KindSchema(gvk)
	if !ok {
		t.Fatal("no schema for the custom resource")
	}
	if got := d.Properties["spec"].Properties["replicas"].Type; got != "integer" {
		t.Errorf("spec.replicas type %q", got)
	}
	if got := d.Properties["metadata"].Properties["namespace"].Type; got != "string" {
		t.Errorf("metadata.namespace type %q: ObjectMeta not resolved", got)
	}

	defs := map[string]*spec.Schema{"Node": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
		"next": {SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(v3RefPrefix + "Node")}}}}},
	}}}}
	out := resolvedSchema(defs, &spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(v3RefPrefix + "Node")}}, map[string]bool{})
	if next := out.Properties["next"]; next.Type != "object" || next.Properties != nil {
		t.Errorf("cycle resolved to %+v, want a bare object", next)
	}
}
