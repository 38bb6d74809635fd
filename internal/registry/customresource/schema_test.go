package customresource

import (
	"encoding/json"
	"reflect"
	"testing"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

func mustSchema(t *testing.T, doc string) *Schema {
	t.Helper()
	props := &crdv1.JSONSchemaProps{}
	if err := json.Unmarshal([]byte(doc), props); err != nil {
		t.Fatal(err)
	}
	s, err := NewSchema(props)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func object(t *testing.T, doc string) map[string]interface{} {
	t.Helper()
	var m map[string]interface{}
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return normalize(m).(map[string]interface{})
}

const widgetSchema = `{"type":"object","properties":{
  "spec":{"type":"object","required":["size"],"properties":{
    "replicas":{"type":"integer","default":1,"minimum":0},
    "size":{"type":"string","enum":["small","large"]},
    "port":{"x-kubernetes-int-or-string":true},
    "name":{"type":"string","maxLength":5},
    "labels":{"type":"object","additionalProperties":{"type":"string"}},
    "items":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string","default":"x"}}}},
    "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
    "template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}},
  "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}`

func TestValidate(t *testing.T) {
	s := mustSchema(t, widgetSchema)
	for _, tc := range []struct {
		name, obj string
		want      []string
	}{
		{name: "valid", obj: `{"spec":{"size":"small","replicas":3,"port":"http"}}`},
		{name: "int or string takes an integer", obj: `{"spec":{"size":"small","port":8080}}`},
		{name: "wrong type", obj: `{"spec":{"size":"small","replicas":"string"}}`,
			want: []string{`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`}},
		{name: "required", obj: `{"spec":{}}`, want: []string{`spec.size: Required value`}},
		{name: "enum", obj: `{"spec":{"size":"medium"}}`,
			want: []string{`spec.size: Unsupported value: "medium": supported values: "small", "large"`}},
		{name: "minimum", obj: `{"spec":{"size":"small","replicas":-1}}`,
			want: []string{`spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`}},
		{name: "embedded resource without kind", obj: `{"spec":{"size":"small","template":{"apiVersion":"v1","spec":{}}}}`,
			want: []string{`spec.template.kind: Required value: must not be empty`}},
		{name: "too long", obj: `{"spec":{"size":"small","name":"abcdefg"}}`,
			want: []string{`spec.name: Too long: may not be more than 5 bytes`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := s.Validate(object(t, tc.obj))
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestPruneAndDefault(t *testing.T) {
	s := mustSchema(t, widgetSchema)
	for _, tc := range []struct {
		name, in, want string
		pruned         []string
	}{
		{name: "unknown fields pruned",
			in:     `{"apiVersion":"a/v1","kind":"W","metadata":{"name":"n","color":"red"},"extra":1,"spec":{"size":"small","replicas":2,"bogus":true,"items":[{"z":1}]}}`,
			want:   `{"apiVersion":"a/v1","kind":"W","metadata":{"name":"n"},"spec":{"size":"small","replicas":2,"items":[{"a":"x"}]}}`,
			pruned: []string{"extra", "metadata.color", "spec.bogus", "spec.items[0].z"}},
		{name: "preserved and additionalProperties kept",
			in:   `{"spec":{"size":"small","replicas":2,"free":{"any":{"thing":1}},"labels":{"a":"b"}}}`,
			want: `{"spec":{"size":"small","replicas":2,"free":{"any":{"thing":1}},"labels":{"a":"b"}}}`},
		{name: "defaults set in existing objects and list items",
			in:   `{"spec":{"size":"small","items":[{},{"a":"y"}]}}`,
			want: `{"spec":{"size":"small","replicas":1,"items":[{"a":"x"},{"a":"y"}]}}`},
		{name: "no default where the parent is missing", in: `{}`, want: `{}`},
		{name: "nulls of fields that are not nullable: defaulted, else dropped",
			in:   `{"spec":{"size":"small","replicas":null,"items":null,"name":null,"labels":{"a":null,"b":"c"}}}`,
			want: `{"spec":{"size":"small","replicas":1,"labels":{"b":"c"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.in)
			pruned := s.Prune(obj)
			s.Default(obj)
			if !reflect.DeepEqual(pruned, tc.pruned) {
				t.Fatalf("pruned %q, want %q", pruned, tc.pruned)
			}
			if want := object(t, tc.want); !reflect.DeepEqual(obj, want) {
				t.Fatalf("got %v\nwant %v", obj, want)
			}
		})
	}
}

const rulesSchema = `{"type":"object","properties":{"spec":{"type":"object",
  "x-kubernetes-validations":[
    {"rule":"self.minReplicas <= self.maxReplicas","message":"minReplicas must not exceed maxReplicas"},
    {"rule":"self.maxReplicas < 100","messageExpression":"'mode ' + self.mode + ' allows at most 99 replicas'"},
    {"rule":"self.mode == oldSelf.mode","message":"mode is immutable","fieldPath":".mode"}],
  "properties":{"minReplicas":{"type":"integer"},"maxReplicas":{"type":"integer"},"mode":{"type":"string","maxLength":10},
    "tags":{"type":"array","maxItems":10,"items":{"type":"string","maxLength":10,"x-kubernetes-validations":[{"rule":"self.startsWith('t-')","reason":"FieldValueForbidden"}]}}}}}}`

func TestValidateRules(t *testing.T) {
	s := mustSchema(t, rulesSchema)
	for _, tc := range []struct {
		name, obj, old string
		want           []string
	}{
		{name: "valid", obj: `{"spec":{"minReplicas":1,"maxReplicas":3,"mode":"a","tags":["t-x"]}}`},
		{name: "message", obj: `{"spec":{"minReplicas":5,"maxReplicas":3,"mode":"a"}}`,
			want: []string{`spec: Invalid value: "object": minReplicas must not exceed maxReplicas`}},
		{name: "message expression", obj: `{"spec":{"minReplicas":1,"maxReplicas":300,"mode":"a"}}`,
			want: []string{`spec: Invalid value: "object": mode a allows at most 99 replicas`}},
		{name: "transition rule on update", obj: `{"spec":{"minReplicas":1,"maxReplicas":3,"mode":"b"}}`, old: `{"spec":{"minReplicas":1,"maxReplicas":3,"mode":"a"}}`,
			want: []string{`spec.mode: Invalid value: "object": mode is immutable`}},
		{name: "list items and reason", obj: `{"spec":{"minReplicas":1,"maxReplicas":3,"mode":"a","tags":["t-a","x"]}}`,
			want: []string{`spec.tags[1]: Forbidden: failed rule: self.startsWith('t-')`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var old map[string]interface{}
			if tc.old != "" {
				old = object(t, tc.old)
			}
			var got []string
			for _, e := range s.ValidateRules(object(t, tc.obj), old) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
