package customresource

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ratchetObject is a custom resource of kind Widget with content (JSON) at its root, as the
// upstream ratcheting specs write theirs.
func ratchetObject(t *testing.T, content string, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	obj := object(t, content)
	obj["apiVersion"] = "example.com/v1"
	obj["kind"] = "Widget"
	u := &unstructured.Unstructured{Object: obj}
	u.SetName("test-resource")
	u.SetNamespace("default")
	u.SetResourceVersion("5")
	u.SetLabels(labels)
	return u
}

const ratchetEnumSchema = `{"type":"object","properties":{
  "field":{"type":"string","enum":["notfoo"]},
  "struct":{"type":"object","properties":{"field":{"type":"string","enum":["notfoo"]}}},
  "list":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["key"],"items":{"type":"object","required":["key"],
    "properties":{"key":{"type":"string"},"field":{"type":"string","enum":["notfoo"]}}}},
  "map":{"type":"object","additionalProperties":{"type":"object","properties":{"field":{"type":"string","enum":["notfoo"]}}}},
  "atomicArray":{"type":"array","items":{"type":"string","enum":["notfoo","notbar","notbaz"]}},
  "setArray":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string","enum":["notfoo","notbar","notbaz"]}}}}`

const ratchetRuleSchema = `{"type":"object","properties":{
  "field":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'foo'"}]},
  "otherField":{"type":"string"},
  "struct":{"type":"object","properties":{"field":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'foo'"}]},"otherField":{"type":"string"}}},
  "list":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["key"],"items":{"type":"object","required":["key"],
    "properties":{"key":{"type":"string"},"field":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'foo'"}]},"otherField":{"type":"string"}}}},
  "map":{"type":"object","additionalProperties":{"type":"object","properties":{"field":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'foo'"}]},"otherField":{"type":"string"}}}},
  "atomicArray":{"type":"array","items":{"type":"string","x-kubernetes-validations":[{"rule":"self != 'foo'"}]}},
  "setArray":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string","x-kubernetes-validations":[{"rule":"self != 'foo'"}]}}}}`

// ratchetTransitionSchema has a transition rule (and, when optional, optionalOldSelf) at each
// correlatable place.
func ratchetTransitionSchema(optional bool) string {
	rule := `{"rule":"self != oldSelf"}`
	if optional {
		rule = `{"rule":"!oldSelf.hasValue() || self != oldSelf.value()","optionalOldSelf":true}`
	}
	field := `{"type":"string","maxLength":5,"x-kubernetes-validations":[` + rule + `]}`
	return `{"type":"object","properties":{"field":` + field + `,
  "struct":{"type":"object","properties":{"field":` + field + `}},
  "list":{"type":"array","maxItems":5,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["key"],"items":{"type":"object","required":["key"],
    "properties":{"key":{"type":"string"},"field":` + field + `}}},
  "map":{"type":"object","maxProperties":5,"additionalProperties":{"type":"object","properties":{"field":` + field + `}}}}}`
}

const (
	allFoo    = `{"field":"foo","struct":{"field":"foo"},"list":[{"key":"foo","field":"foo"},{"key":"bar","field":"foo"}],"map":{"foo":{"field":"foo"},"bar":{"field":"foo"}}}`
	allNotFoo = `{"field":"notfoo","struct":{"field":"notfoo"},"list":[{"key":"foo","field":"notfoo"},{"key":"bar","field":"notfoo"}],"map":{"foo":{"field":"notfoo"},"bar":{"field":"notfoo"}}}`
)

// TestValidationRatcheting runs the scenarios of upstream's e2e specs "CRDValidationRatcheting"
// through a custom resource's update validation: the stored object was valid under the schema it
// was written with; the schema (given here) refuses it now.
func TestValidationRatcheting(t *testing.T) {
	for _, tc := range []struct {
		name, schema, old, new string
		newLabels              map[string]string
		create                 bool     // validate new as a create (old unused)
		want                   []string // the start of an error's line, each; none: valid
		absent                 []string // what no error may start with
	}{
		{name: "schema errors on unchanged correlatable fields ratchet", schema: ratchetEnumSchema,
			old:       `{"field":"foo","struct":{"field":"foo"},"list":[{"key":"first","field":"foo"}],"map":{"foo":{"field":"foo"}}}`,
			new:       `{"field":"foo","struct":{"field":"foo"},"list":[{"key":"first","field":"foo"}],"map":{"foo":{"field":"foo"}}}`,
			newLabels: map[string]string{"foo": "bar"}},
		{name: "schema errors on unchanged list items and map values ratchet beside new ones", schema: ratchetEnumSchema,
			old:  `{"list":[{"key":"first","field":"foo"}],"map":{"foo":{"field":"foo"}}}`,
			new:  `{"list":[{"key":"second","field":"foo"},{"key":"first","field":"foo"}],"map":{"foo":{"field":"foo"},"k.x":{"field":"foo"}}}`,
			want: []string{"list[0].field", "map.k.x.field"}, absent: []string{"list[1]", "map.foo"}},
		{name: "schema errors on unchanged uncorrelatable items do not", schema: ratchetEnumSchema,
			old: `{"setArray":["foo","bar","baz"],"atomicArray":["foo","bar","baz"]}`, new: `{"setArray":["foo","bar","baz","notfoo"],"atomicArray":["foo","bar","baz","notfoo"]}`,
			want: []string{"atomicArray[0]", "setArray[0]"}},
		{name: "schema errors on changed fields do not", schema: strings.ReplaceAll(ratchetEnumSchema, `"notfoo"]`, `"foo"]`),
			old: allFoo, new: allNotFoo,
			want: []string{"field: Unsupported", "struct.field", "list[0].field", "list[1].field", "map.foo.field", "map.bar.field"}},
		{name: "rule errors on unchanged correlatable fields ratchet", schema: ratchetRuleSchema, old: allNotFoo,
			new: `{"field":"notfoo","otherField":"x","struct":{"field":"notfoo","otherField":"x"},
			  "list":[{"key":"foo","field":"notfoo","otherField":"x"},{"key":"bar","field":"notfoo","otherField":"x"},{"key":"baz","field":"foo","otherField":"x"}],
			  "map":{"foo":{"field":"notfoo","otherField":"x"},"bar":{"field":"notfoo","otherField":"x"}}}`},
		{name: "rule errors on list items matched by key, reordered, ratchet", schema: ratchetRuleSchema,
			old: `{"list":[{"key":"foo","field":"notfoo"},{"key":"bar","field":"notfoo"}]}`, new: `{"list":[{"key":"bar","field":"notfoo"},{"key":"foo","field":"notfoo"}]}`},
		{name: "rule errors on unchanged uncorrelatable items do not", schema: ratchetRuleSchema,
			old: `{"setArray":["foo","bar","baz"],"atomicArray":["foo","bar","baz"]}`, new: `{"setArray":["foo","bar","baz","notfoo"],"atomicArray":["foo","bar","baz","notfoo"]}`,
			newLabels: map[string]string{"foo": "bar"}, want: []string{"atomicArray[0]", "setArray[0]"}},
		{name: "rule errors on changed fields do not", schema: ratchetRuleSchema, old: allFoo, new: allNotFoo,
			want: []string{"field: Invalid value", "struct.field", "list[0].field", "list[1].field", "map[foo].field", "map[bar].field"}},
		{name: "transition rules are not ratcheted, and run on correlated list items", schema: ratchetTransitionSchema(false), old: allFoo, new: allFoo,
			newLabels: map[string]string{"foo": "bar"}, want: []string{"field: Invalid value", "struct.field", "list[0].field", "list[1].field", "map[foo].field", "map[bar].field"}},
		{name: "optionalOldSelf rules run on create with no old value", schema: ratchetTransitionSchema(true), new: allFoo, create: true},
		{name: "optionalOldSelf rules see the old value on update", schema: ratchetTransitionSchema(true), old: allFoo, new: allFoo,
			newLabels: map[string]string{"foo": "bar"}, want: []string{"field: Invalid value", "struct.field", "list[0].field", "list[1].field", "map[foo].field", "map[bar].field"}},
		{name: "optionalOldSelf rules pass a changed value", schema: ratchetTransitionSchema(true), old: allFoo,
			new: `{"field":"new","struct":{"field":"new"},"list":[{"key":"foo","field":"new"},{"key":"bar","field":"new"}],"map":{"foo":{"field":"new"},"bar":{"field":"new"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &strategy{gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, namespaced: true, schema: mustSchema(t, tc.schema)}
			obj := ratchetObject(t, tc.new, tc.newLabels)
			var errs []string
			if tc.create {
				for _, e := range st.Validate(context.Background(), obj) {
					errs = append(errs, e.Error())
				}
			} else {
				for _, e := range st.ValidateUpdate(context.Background(), obj, ratchetObject(t, tc.old, nil)) {
					errs = append(errs, e.Error())
				}
			}
			got := strings.Join(errs, "\n")
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("want valid, got\n%s", got)
			}
			for _, w := range tc.want {
				if !strings.HasPrefix(got, w) && !strings.Contains(got, "\n"+w) {
					t.Errorf("no error starts with %q:\n%s", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.HasPrefix(got, a) || strings.Contains(got, "\n"+a) {
					t.Errorf("an error starts with %q:\n%s", a, got)
				}
			}
		})
	}
}
