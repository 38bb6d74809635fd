package customresource

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

// fieldStep is one step of a rule's fieldPath: a property (name) or a key of a map (key).
type fieldStep struct {
	name string
	key  bool
}

// parseFieldPath reads the fieldPath of an x-kubernetes-validations rule (".a.b", ".a['b.c']")
// against the schema of the rule's node, as kube-apiserver does: every step names a declared
// property, or a key where the node is a map (additionalProperties); lists cannot be stepped into.
func parseFieldPath(path string, s *crdv1.JSONSchemaProps) ([]fieldStep, error) {
	var steps []fieldStep
	rest := path
	for rest != "" {
		var name string
		switch rest[0] {
		case '.':
			end := strings.IndexAny(rest[1:], ".[]")
			if end < 0 {
				end = len(rest) - 1
			}
			name, rest = rest[1:1+end], rest[1+end:]
			if name == "" {
				return nil, errors.New("unexpected end of JSON path")
			}
		case '[':
			quoted, after, err := quotedKey(rest[1:])
			if err != nil {
				return nil, err
			}
			if !strings.HasPrefix(after, "]") {
				return nil, fmt.Errorf("expected ] after %q", quoted)
			}
			name, rest = quoted, after[1:]
		default:
			return nil, fmt.Errorf("expected [ or . but got: %s", rest)
		}
		step, next, err := stepInto(s, name)
		if err != nil {
			return nil, err
		}
		steps, s = append(steps, step), next
	}
	return steps, nil
}

// quotedKey reads a single-quoted string ('a\'b') at the start of in: its unescaped text and
// what follows it.
func quotedKey(in string) (string, string, error) {
	if !strings.HasPrefix(in, "'") {
		return "", "", errors.New("expected single quoted string")
	}
	var b strings.Builder
	for i := 1; i < len(in); i++ {
		switch in[i] {
		case '\\':
			if i+1 == len(in) {
				return "", "", errors.New("invalid string literal")
			}
			i++
			b.WriteByte(in[i])
		case '\'':
			return b.String(), in[i+1:], nil
		default:
			b.WriteByte(in[i])
		}
	}
	return "", "", errors.New("unterminated string literal")
}

// stepInto is the step to name below s, and the schema there.
func stepInto(s *crdv1.JSONSchemaProps, name string) (fieldStep, *crdv1.JSONSchemaProps, error) {
	if s == nil {
		return fieldStep{}, nil, errors.New("does not refer to a valid field")
	}
	if s.Properties != nil {
		p, ok := s.Properties[name]
		if !ok {
			return fieldStep{}, nil, errors.New("does not refer to a valid field")
		}
		return fieldStep{name: name}, &p, nil
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		return fieldStep{name: name, key: true}, s.AdditionalProperties.Schema, nil
	}
	return fieldStep{}, nil, errors.New("does not refer to a valid field")
}

// fieldPathOf is path followed by a rule's fieldPath steps.
func fieldPathOf(path *field.Path, steps []fieldStep) *field.Path {
	for _, st := range steps {
		if st.key {
			path = path.Key(st.name)
		} else {
			path = path.Child(st.name)
		}
	}
	return path
}
