package customresource

import (
	"strings"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

// escapeProperty is the name a rule reads a property by, escaped as kube-apiserver does: a CEL
// reserved word becomes __word__, and in other names '__' becomes __underscores__, '.' __dot__,
// '-' __dash__ and '/' __slash__ (the VolumeSnapshotContent CRD's rule reads
// self.__namespace__). A name that starts with a digit or holds any other character is not
// accessible (false).
func escapeProperty(name string) (string, bool) {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return "", false
	}
	if celReserved(name) {
		return "__" + name + "__", true
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' && i+1 < len(name) && name[i+1] == '_':
			b.WriteString("__underscores__")
			i++
		case c == '.':
			b.WriteString("__dot__")
		case c == '-':
			b.WriteString("__dash__")
		case c == '/':
			b.WriteString("__slash__")
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'):
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// escapedValue is v as a rule at schema s sees it: the declared properties of its objects under
// their escaped names (escapeProperty), at every depth; map keys (additionalProperties) stay as
// they are. v is never changed: what needs escaping is copied, the rest shared.
func escapedValue(v interface{}, s *crdv1.JSONSchemaProps) interface{} {
	out, _ := escaped(v, s)
	return out
}

// escaped is escapedValue, and whether anything in v needed escaping.
func escaped(v interface{}, s *crdv1.JSONSchemaProps) (interface{}, bool) {
	if s == nil {
		return v, false
	}
	switch val := v.(type) {
	case map[string]interface{}:
		var out map[string]interface{}
		for k, child := range val {
			name, next, changed := k, child, false
			if p, declared := s.Properties[k]; declared {
				if e, ok := escapeProperty(k); ok {
					name = e
				}
				next, changed = escaped(child, &p)
			} else if s.AdditionalProperties != nil {
				next, changed = escaped(child, s.AdditionalProperties.Schema)
			}
			if !changed && name == k {
				continue
			}
			if out == nil {
				out = make(map[string]interface{}, len(val))
				for k2, c2 := range val {
					out[k2] = c2
				}
			}
			delete(out, k)
			out[name] = next
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []interface{}:
		if s.Items == nil || s.Items.Schema == nil {
			return v, false
		}
		var out []interface{}
		for i, item := range val {
			next, changed := escaped(item, s.Items.Schema)
			if changed && out == nil {
				out = append(make([]interface{}, 0, len(val)), val[:i]...)
			}
			if out != nil {
				out = append(out, next)
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}
