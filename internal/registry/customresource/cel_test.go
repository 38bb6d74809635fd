package customresource

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	kcel "github.com/skiff-sh/skiff/internal/cel"
)

func schemaProps(t *testing.T, doc string) *crdv1.JSONSchemaProps {
	t.Helper()
	props := &crdv1.JSONSchemaProps{}
	if err := json.Unmarshal([]byte(doc), props); err != nil {
		t.Fatal(err)
	}
	return props
}

// specRulesSchema is the schema of upstream's e2e specs "CustomResourceValidationRules": typed
// fields, the Kubernetes list library, an O(n^2) rule on a bounded list.
const specRulesSchema = `{"type":"object","properties":{
  "spec":{"type":"object","x-kubernetes-validations":[
    {"rule":"self.x + self.y > 0"},
    {"rule":"self.firstArray.isSorted() && self.secondArray.isSorted() && ((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)"},
    {"rule":"self.largeArray.all(x, self.largeArray.all(y, y == x))"}],
   "properties":{"x":{"type":"integer"},"y":{"type":"integer"},
    "firstArray":{"type":"array","maxItems":1000,"items":{"type":"integer"}},
    "secondArray":{"type":"array","maxItems":1000,"items":{"type":"integer"}},
    "largeArray":{"type":"array","maxItems":725,"items":{"type":"integer"}}}},
  "status":{"type":"object","x-kubernetes-validations":[{"rule":"self.health == 'ok' || self.health == 'unhealthy'"}],
   "properties":{"health":{"type":"string"}}}}}`

// twelveContainsRules are twelve rules on the items of a list of long strings: each within the
// per-expression limit (881 x 10,000 items), together over the per-definition one.
func twelveContainsRules() string {
	var rules []string
	for _, c := range "abcdefghijkl" {
		rules = append(rules, fmt.Sprintf(`{"rule":"self.contains('%c')"}`, c))
	}
	return `{"type":"object","properties":{"spec":{"type":"object","properties":{"x":{"type":"array","maxItems":10000,
  "items":{"type":"string","maxLength":2200,"x-kubernetes-validations":[` + strings.Join(rules, ",") + `]}}}}}}`
}

const costHint = " (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"

// TestValidateRuleDefinitions checks the errors a definition's rules get when it is written. The
// wanted errors are kube-apiserver v1.33's for the same schemas (apiextensions-apiserver
// v0.33.13's ValidateCustomResourceDefinition, run on each): the estimated costs, the limits and
// the messages must agree, since they decide which definitions a cluster accepts.
func TestValidateRuleDefinitions(t *testing.T) {
	const items = "openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations"
	for _, tc := range []struct {
		name, schema string
		want         []string // field: type: detail (the detail's first line)
	}{
		{name: "the e2e schema is accepted", schema: specRulesSchema},
		{name: "undeclared field", schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.z == 100"}],"properties":{"x":{"type":"integer"}}}}}`,
			want: []string{"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: compilation failed: ERROR: <input>:1:5: undefined field 'z'"}},
		{name: "syntax error", schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self = 42"}]}}}`,
			want: []string{"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: compilation failed: ERROR: <input>:1:6: Syntax error: token recognition error at: '= '"}},
		{name: "not a boolean", schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"1"}]}}}`,
			want: []string{"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: cel expression must evaluate to a bool"}},
		{name: "formats are CEL types: date-time a timestamp, duration a duration, byte bytes", schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[
			{"rule":"self.t > timestamp('2020-01-01T00:00:00Z') && self.day < timestamp('2030-01-01T00:00:00Z')"},{"rule":"self.d < duration('1h')"},{"rule":"size(self.b) < 10"},{"rule":"self.t != ''"}],
			"properties":{"t":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},"d":{"type":"string","format":"duration"},"b":{"type":"string","format":"byte","maxLength":20}}}}}`,
			want: []string{"openAPIV3Schema.properties[spec].x-kubernetes-validations[3].rule: Invalid value: compilation failed: ERROR: <input>:1:8: found no matching overload for '_!=_' applied to '(timestamp, string)'"}},
		{name: "metadata name and kind at the root", schema: `{"type":"object","x-kubernetes-validations":[{"rule":"self.metadata.name.startsWith('a') && self.kind == 'W'"}]}`},
		{name: "per-expression estimated cost (unbounded lists of lists)",
			schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{"x":{"type":"array","items":{"type":"array","items":{"type":"string"},
			  "x-kubernetes-validations":[{"rule":"self.all(s, s == 'string constant')"}]}}}}}}`,
			want: []string{
				items + "[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x" + costHint,
				items + "[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x" + costHint,
			}},
		{name: "per-definition estimated cost", schema: twelveContainsRules(),
			want: []string{
				items + "[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				items + "[1].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				items + "[2].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				items + "[3].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.057200x" + costHint,
			}},
		{name: "bounded nested lists stay within the limits", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{"x":{"type":"array","maxItems":100,
			"items":{"type":"array","maxItems":1000,"items":{"type":"string","maxLength":100},"x-kubernetes-validations":[
			{"rule":"self.all(s, s == 'string constant')"},{"rule":"self.all(s, s.startsWith('a'))"},{"rule":"self.exists(s, s == 'q')"}]}}}}}}`},
		{name: "list of strings: isSorted reads every character", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{"x":{"type":"array","maxItems":10000,
			"items":{"type":"array","maxItems":1000,"items":{"type":"string","maxLength":1000},"x-kubernetes-validations":[{"rule":"self.isSorted()"}]}}}}}}`,
			want: []string{
				items + "[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x" + costHint,
				items + "[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 40.1x" + costHint,
			}},
		{name: "message expression of unknown size", schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[
			{"rule":"self.n < 100","messageExpression":"'n is ' + string(self.n)"}],"properties":{"n":{"type":"integer"}}}}}`,
			want: []string{
				"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x" + costHint,
				"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].messageExpression: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x" + costHint,
			}},
		{name: "oldSelf where values have no counterpart, optionalOldSelf without oldSelf", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"a":{"type":"array","items":{"type":"object","properties":{"f":{"type":"string","maxLength":5,"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}}}},
			"m":{"type":"object","x-kubernetes-map-type":"atomic","properties":{"g":{"type":"string","maxLength":5,"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}}},
			"o":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'x'","optionalOldSelf":true}]}}}}}`,
			want: []string{
				"openAPIV3Schema.properties[spec].properties[a].items.properties[f].x-kubernetes-validations[0].rule: Invalid value: oldSelf cannot be used on the uncorrelatable portion of the schema within openAPIV3Schema.properties[spec].properties[a]",
				"openAPIV3Schema.properties[spec].properties[o].x-kubernetes-validations[0].optionalOldSelf: Invalid value: may not be set if oldSelf is not used in rule",
			}},
		// Gateway API v1.6.3's Gateway (spec.infrastructure.annotations): kube-apiserver sizes a
		// map's keys by its shared string type, which carries no maximum, so these rules cost
		// next to nothing there and the definition is accepted.
		{name: "rules over map keys (Gateway API's infrastructure annotations)", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"annotations":{"type":"object","maxProperties":16,"additionalProperties":{"type":"string","maxLength":4096},"x-kubernetes-validations":[
			{"rule":"self.all(key, key.matches(r\"\"\"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$\"\"\"))"},
			{"rule":"self.all(key, key.split(\"/\")[0].size() < 253)"}]}}}}}`},
		{name: "field paths", schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[
			{"rule":"has(self.a)","fieldPath":".b"},{"rule":"true","fieldPath":".m['x.y']"},{"rule":"true","fieldPath":".l"},{"rule":"true","fieldPath":".l[0]"}],
			"properties":{"a":{"type":"string"},"m":{"type":"object","additionalProperties":{"type":"string"}},"l":{"type":"array","items":{"type":"string"}}}}}}`,
			want: []string{
				"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].fieldPath: Invalid value: fieldPath must be a valid path",
				"openAPIV3Schema.properties[spec].x-kubernetes-validations[3].fieldPath: Invalid value: fieldPath must be a valid path",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range ValidateRuleDefinitions(schemaProps(t, tc.schema), field.NewPath("openAPIV3Schema")) {
				detail, _, _ := strings.Cut(e.Detail, "\n")
				got = append(got, fmt.Sprintf("%s: %s: %s", e.Field, e.Type, detail))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// escapedNamesSchema has properties a rule reads by their escaped names.
const escapedNamesSchema = `{"type":"object","properties":{"spec":{"type":"object",
  "x-kubernetes-validations":[{"rule":"self.x__dash__prop > 0 && self.a__dot__b == 'c' && self.redact__underscores__d"}],
  "properties":{"x-prop":{"type":"integer"},"a.b":{"type":"string"},"redact__d":{"type":"boolean"},
   "ref":{"type":"object","x-kubernetes-validations":[{"rule":"has(self.name) && has(self.__namespace__)","message":"both name and namespace must be set"}],
    "properties":{"name":{"type":"string"},"namespace":{"type":"string"}}}}}}}`

func TestEscapeProperty(t *testing.T) {
	for name, want := range map[string]string{
		"namespace": "__namespace__", "x-prop": "x__dash__prop", "a.b": "a__dot__b", "redact__d": "redact__underscores__d",
		"a/b": "a__slash__b", "plain_name": "plain_name", "_x": "_x", "1st": "", "a b": "", "": "",
	} {
		got, ok := escapeProperty(name)
		if got != want || ok != (want != "") {
			t.Errorf("escapeProperty(%q) = %q %v, want %q", name, got, ok, want)
		}
	}
	// The value a rule sees is a copy where needed; the object is never changed.
	schema := schemaProps(t, escapedNamesSchema)
	obj := map[string]interface{}{"spec": map[string]interface{}{"ref": map[string]interface{}{"namespace": "ns"}, "extra": "e"}}
	got := escapedValue(obj, schema).(map[string]interface{})
	if got["spec"].(map[string]interface{})["ref"].(map[string]interface{})["__namespace__"] != "ns" {
		t.Errorf("escaped value = %v", got)
	}
	if _, ok := obj["spec"].(map[string]interface{})["ref"].(map[string]interface{})["namespace"]; !ok {
		t.Errorf("the object was changed: %v", obj)
	}
	plain := map[string]interface{}{"spec": map[string]interface{}{"ref": map[string]interface{}{"name": "s"}}}
	if v := escapedValue(plain, schema); v.(map[string]interface{})["spec"].(map[string]interface{})["ref"].(map[string]interface{})["name"] != "s" {
		t.Errorf("value without escaped names = %v", v)
	}
}

// TestEvaluateRules checks rules at run time: the e2e specs' objects, the per-call cost limit,
// the per-object budget, and where a failed rule's error points (fieldPath, reason).
func TestEvaluateRules(t *testing.T) {
	ints := func(n int, v int64) []interface{} {
		out := make([]interface{}, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	// A rule reading a string of 1,000 characters costs about a hundred; ten of them are over a
	// budget of 500 (the object's budget is kcel.RuntimeCostBudget, scaled down here).
	budgetSchema := `{"type":"object","properties":{"spec":{"type":"object","properties":{"items":{"type":"array","maxItems":10,"items":{"type":"object",
	  "x-kubernetes-validations":[{"rule":"self.s.lowerAscii() != 'x'"}],"properties":{"s":{"type":"string","maxLength":1000}}}}}}}}`
	budgetItems := make([]interface{}, 10)
	for i := range budgetItems {
		budgetItems[i] = map[string]interface{}{"s": strings.Repeat("a", 1000)}
	}
	pathsSchema := `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[
	  {"rule":"!has(self.m) || !('x.y' in self.m)","fieldPath":".m['x.y']","reason":"FieldValueForbidden"},
	  {"rule":"has(self.name)","fieldPath":".name","reason":"FieldValueRequired","message":"name is required"},
	  {"rule":"!has(self.tags)","reason":"FieldValueDuplicate","fieldPath":".tags"}],
	  "properties":{"name":{"type":"string"},"m":{"type":"object","additionalProperties":{"type":"string"}},"tags":{"type":"array","items":{"type":"string"}}}}}}`
	for _, tc := range []struct {
		name, schema string
		budget       int64  // the object's budget; 0: kube-apiserver's
		perCallLimit uint64 // what one call may cost; 0: kube-apiserver's
		obj          map[string]interface{}
		want         []string // error strings, or the prefix before "..."
	}{
		{name: "satisfied", schema: specRulesSchema, obj: map[string]interface{}{"spec": map[string]interface{}{
			"x": int64(1), "y": int64(0), "firstArray": []interface{}{int64(3), int64(4)}, "secondArray": []interface{}{int64(5), int64(10)}, "largeArray": []interface{}{int64(2), int64(2)}}}},
		{name: "failed rule", schema: specRulesSchema, obj: map[string]interface{}{"spec": map[string]interface{}{"x": int64(0), "y": int64(0)}},
			want: []string{`spec: Invalid value: "object": failed rule: self.x + self.y > 0`, `spec: Invalid value: "object": no such key: firstArray evaluating rule: self.firstArray.isSorted() && self.secondArray.isSorted() && ((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)`, `spec: Invalid value: "object": no such key: largeArray evaluating rule: self.largeArray.all(x, self.largeArray.all(y, y == x))`}},
		// The e2e spec's object: 725 x 725 comparisons cost more than the 1,000,000 a call may.
		// Run at a hundredth of the limit (and of the list: 73 x 73), the same rule trips it
		// without spending a million steps (minutes under -race).
		{name: "per-call cost limit", schema: specRulesSchema, perCallLimit: kcel.PerCallLimit / 100, obj: map[string]interface{}{"spec": map[string]interface{}{"x": int64(1), "y": int64(0),
			"firstArray": []interface{}{}, "secondArray": []interface{}{}, "largeArray": ints(73, 20)}},
			want: []string{`spec: Invalid value: "object": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.largeArray.all(x, self.largeArray.all(y, y == x))`}},
		{name: "within the per-call cost limit", schema: specRulesSchema, perCallLimit: kcel.PerCallLimit / 100, obj: map[string]interface{}{"spec": map[string]interface{}{"x": int64(1), "y": int64(0),
			"firstArray": []interface{}{}, "secondArray": []interface{}{}, "largeArray": ints(30, 20)}}},
		{name: "per-object budget", schema: budgetSchema, budget: 500, obj: map[string]interface{}{"spec": map[string]interface{}{"items": budgetItems}},
			want: []string{`spec.items[...]: Invalid value: "object": validation failed due to running out of cost budget, no further validation rules will be run`}},
		{name: "a number written as an integer is a double", schema: `{"type":"object","properties":{"spec":{"type":"object",
		  "x-kubernetes-validations":[{"rule":"self.ratio * 2.0 < 5.0"},{"rule":"self.ratios.all(r, r + 0.5 > 1.0)"}],
		  "properties":{"ratio":{"type":"number"},"ratios":{"type":"array","maxItems":10,"items":{"type":"number"}}}}}}`,
			obj: map[string]interface{}{"spec": map[string]interface{}{"ratio": int64(2), "ratios": []interface{}{int64(1), 1.5}}}},
		{name: "formatted strings reach rules as timestamps, durations and bytes", schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[
		  {"rule":"self.t > timestamp('2020-01-01T00:00:00Z') && self.day < timestamp('2030-01-01T00:00:00Z')"},{"rule":"self.d < duration('1h')"},{"rule":"self.b == b'hi'"}],
		  "properties":{"t":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},"d":{"type":"string","format":"duration"},"b":{"type":"string","format":"byte","maxLength":20}}}}}`,
			obj: map[string]interface{}{"spec": map[string]interface{}{"t": "2024-05-01T10:00:00Z", "day": "2024-05-01", "d": "30m", "b": "aGk="}}},
		{name: "fieldPath and reason", schema: pathsSchema, obj: map[string]interface{}{"spec": map[string]interface{}{
			"m": map[string]interface{}{"x.y": "1"}, "tags": []interface{}{"a"}}},
			want: []string{`spec.m[x.y]: Forbidden: failed rule: !has(self.m) || !('x.y' in self.m)`, `spec.name: Required value: name is required`,
				`spec.tags: Duplicate value: "failed rule: !has(self.tags)"`}},
		// The VolumeSnapshotContent CRD's rule: a property named by a CEL reserved word is read
		// as __namespace__, one with a dash, a dot or a double underscore escaped likewise.
		{name: "escaped property names, present", schema: escapedNamesSchema, obj: map[string]interface{}{"spec": map[string]interface{}{
			"ref": map[string]interface{}{"name": "s", "namespace": "ns"}, "x-prop": int64(1), "a.b": "c", "redact__d": true}}},
		{name: "escaped property names, missing", schema: escapedNamesSchema, obj: map[string]interface{}{"spec": map[string]interface{}{
			"ref": map[string]interface{}{"name": "s"}, "x-prop": int64(0), "a.b": "c", "redact__d": true}},
			want: []string{`spec: Invalid value: "object": failed rule: self.x__dash__prop > 0 && self.a__dot__b == 'c' && self.redact__underscores__d`,
				`spec.ref: Invalid value: "object": both name and namespace must be set`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSchema(schemaProps(t, tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if tc.perCallLimit != 0 {
				// The rules compile once, at the first validation: compile them here instead.
				s.celOnce.Do(func() {
					s.cel, _, s.celErr = compileCELWithLimit(schemaProps(t, tc.schema), field.NewPath("openAPIV3Schema"), tc.perCallLimit)
				})
				if s.celErr != nil {
					t.Fatal(s.celErr)
				}
			}
			if tc.budget != 0 {
				s.runtimeBudget = tc.budget
			}
			if errs := ValidateRuleDefinitions(schemaProps(t, tc.schema), field.NewPath("openAPIV3Schema")); len(errs) > 0 {
				t.Fatalf("the schema is refused: %v", errs)
			}
			errs := s.ValidateRules(tc.obj, nil)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d %q", len(errs), errs, len(tc.want), tc.want)
			}
			for i, e := range errs {
				want := tc.want[i]
				if pre, post, ok := strings.Cut(want, "[...]"); ok {
					if !strings.HasPrefix(e.Error(), pre+"[") || !strings.HasSuffix(e.Error(), post) {
						t.Errorf("error %d = %q, want %q", i, e.Error(), want)
					}
					continue
				}
				if e.Error() != want {
					t.Errorf("error %d = %q\nwant %q", i, e.Error(), want)
				}
			}
		})
	}
}
