package customresource

import (
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

// Validation ratcheting (CRDValidationRatcheting, on by default since Kubernetes v1.30): an update
// may keep a value the schema (changed since it was written) now refuses, as long as it leaves
// that value as it was. A value is "as it was" when the old object has it at the same place: the
// place is followed through properties, map keys and the items of x-kubernetes-list-type: map
// lists (matched by their keys); the items of other lists have no place in the old object
// (uncorrelatable), so only their whole list can be unchanged.

// correlatedItem finds the old item of a map list that has item's keys, as kube-apiserver
// correlates list items for ratcheting and transition rules. ok is false for lists of other types
// (their items are not correlatable) and for a new item.
func correlatedItem(s *crdv1.JSONSchemaProps, item interface{}, old interface{}) (interface{}, bool) {
	if !mapList(s) {
		return nil, false
	}
	m, isMap := item.(map[string]interface{})
	oldList, isList := old.([]interface{})
	if !isMap || !isList {
		return nil, false
	}
	for _, candidate := range oldList {
		om, ok := candidate.(map[string]interface{})
		if ok && sameKeys(s.XListMapKeys, m, om) {
			return candidate, true
		}
	}
	return nil, false
}

func sameKeys(keys []string, a, b map[string]interface{}) bool {
	for _, k := range keys {
		av, aok := a[k]
		bv, bok := b[k]
		if aok != bok || !reflect.DeepEqual(av, bv) {
			return false
		}
	}
	return true
}

// Ratchet drops the schema errors of an update that sit in values the update left unchanged (see
// above). errs are Validate's errors for obj; old is the stored object. Metadata is not the
// schema's (it is validated as object metadata), so a change of labels alone leaves the content
// unchanged.
func (s *Schema) Ratchet(errs field.ErrorList, obj, old map[string]interface{}) field.ErrorList {
	if s.structural == nil || old == nil || len(errs) == 0 {
		return errs
	}
	content, oldContent := withoutMetadata(obj, false), withoutMetadata(old, false)
	var kept field.ErrorList
	for _, e := range errs {
		if !unchangedAlong(s.structural, content, oldContent, errorPath(e)) {
			kept = append(kept, e)
		}
	}
	return kept
}

// errorPath is an error's field path as written ("spec.list[0].field"; "" for the root).
func errorPath(e *field.Error) string {
	if e.Field == "<nil>" {
		return ""
	}
	return e.Field
}

// unchangedAlong reports whether some value on the way to rest (v and old are the values here,
// under schema s) is one the update left unchanged: then everything below it is unchanged too.
func unchangedAlong(s *crdv1.JSONSchemaProps, v, old interface{}, rest string) bool {
	for {
		if reflect.DeepEqual(v, old) {
			return true
		}
		if rest == "" || s == nil {
			return false
		}
		next, nv, nold, after, ok := step(s, v, old, rest)
		if !ok {
			return false
		}
		s, v, old, rest = next, nv, nold, after
	}
}

// step follows the first step of rest below v (and the same place below old): a property, a map
// key (keys may hold dots: the longest key of v that rest starts with is taken) or a list index.
// ok is false when the place has no counterpart in old.
func step(s *crdv1.JSONSchemaProps, v, old interface{}, rest string) (next *crdv1.JSONSchemaProps, nv, nold interface{}, after string, ok bool) {
	rest = strings.TrimPrefix(rest, ".")
	switch val := v.(type) {
	case map[string]interface{}:
		oldMap, isMap := old.(map[string]interface{})
		name := longestKey(val, rest)
		if name == "" || !isMap {
			return nil, nil, nil, "", false
		}
		ov, found := oldMap[name]
		if !found {
			return nil, nil, nil, "", false
		}
		if p, declared := s.Properties[name]; declared {
			next = &p
		} else if s.AdditionalProperties != nil {
			next = s.AdditionalProperties.Schema
		}
		return next, val[name], ov, rest[len(name):], true
	case []interface{}:
		if !strings.HasPrefix(rest, "[") || s.Items == nil {
			return nil, nil, nil, "", false
		}
		end := strings.IndexByte(rest, ']')
		i, err := strconv.Atoi(rest[1:max(end, 1)])
		if end < 0 || err != nil || i < 0 || i >= len(val) {
			return nil, nil, nil, "", false
		}
		ov, found := correlatedItem(s, val[i], old)
		if !found {
			return nil, nil, nil, "", false
		}
		return s.Items.Schema, val[i], ov, rest[end+1:], true
	}
	return nil, nil, nil, "", false
}

// longestKey is the longest key of m that rest starts with, whole (followed by '.', '[' or the
// end), "" when none is.
func longestKey(m map[string]interface{}, rest string) string {
	best := ""
	for k := range m {
		if len(k) <= len(best) || !strings.HasPrefix(rest, k) {
			continue
		}
		if len(rest) == len(k) || rest[len(k)] == '.' || rest[len(k)] == '[' {
			best = k
		}
	}
	return best
}
