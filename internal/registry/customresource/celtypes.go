package customresource

import (
	"sort"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

// Sizes kube-apiserver reasons with when it estimates what a rule may cost: the largest request
// body it accepts, and the smallest JSON each kind of value takes in it. A schema that bounds
// nothing (no maxItems, maxProperties, maxLength) lets a list, map or string be as large as a
// request of such minimal values.
const (
	maxRequestSizeBytes = 3 * 1024 * 1024
	minStringSize       = 2  // ""
	minBoolSize         = 4  // true
	minNumberSize       = 1  // 0
	jsonDateSize        = 12 // "2006-01-02", quoted, with a comma
	minDatetimeSize     = 21 // the shortest RFC 3339 date-time, quoted
	maxDatetimeSize     = 32 // the longest RFC 3339 date-time, quoted
	minDurationSize     = 3  // "0", quoted
	maxDurationSize     = 32 // as long as a date-time, as kube-apiserver bounds it
)

// declType is the CEL view of one schema node: its CEL type, what is below it, and the figures
// the cost estimator needs (how many elements it may hold, its smallest serialized size).
type declType struct {
	cel *types.Type
	// fields are an object's declared properties (by name), elem a list's items or a map's values.
	fields map[string]*declType
	elem   *declType
	// maxElements is the largest size() of a list, map or string (characters); minSize the fewest
	// bytes the value takes in a request.
	maxElements int64
	minSize     int64
}

// newDeclType types s for CEL as kube-apiserver does for x-kubernetes-validations: objects with
// properties are object types (a rule naming an undeclared field does not compile), objects with
// additionalProperties are maps, arrays lists, x-kubernetes-int-or-string dyn. name is the
// object type's name (its path from the rule's scope); objects records every object type by name
// for the type provider. root (the scope of a resource or an embedded resource) adds apiVersion,
// kind and metadata.name/generateName. nil: s cannot be typed (an array without items).
func newDeclType(s *crdv1.JSONSchemaProps, root bool, name string, objects map[string]*declType) *declType {
	if s == nil {
		return nil
	}
	if s.XIntOrString {
		return &declType{cel: types.DynType, maxElements: maxRequestSizeBytes - 2, minSize: 1}
	}
	switch s.Type {
	case "array":
		if s.Items == nil || s.Items.Schema == nil {
			return nil
		}
		items := newDeclType(s.Items.Schema, s.Items.Schema.XEmbeddedResource, name+".@items", objects)
		if items == nil {
			return nil
		}
		limit := (maxRequestSizeBytes - 2) / (items.minSize + 1)
		if s.MaxItems != nil {
			limit = max(*s.MaxItems, 0)
		}
		return &declType{cel: types.NewListType(items.cel), elem: items, maxElements: limit, minSize: 2}
	case "object":
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			values := newDeclType(s.AdditionalProperties.Schema, s.AdditionalProperties.Schema.XEmbeddedResource, name+".@values", objects)
			if values == nil {
				return nil
			}
			limit := (maxRequestSizeBytes - 2) / (values.minSize + 6) // "":v, per entry
			if s.MaxProperties != nil {
				limit = max(*s.MaxProperties, 0)
			}
			return &declType{cel: types.NewMapType(types.StringType, values.cel), elem: values, maxElements: limit, minSize: 2}
		}
		return newObjectType(s, root, name, objects)
	case "string":
		return stringDeclType(s)
	case "boolean":
		return &declType{cel: types.BoolType, minSize: minBoolSize}
	case "number":
		return &declType{cel: types.DoubleType, minSize: minNumberSize}
	case "integer":
		return &declType{cel: types.IntType, minSize: minNumberSize}
	}
	return nil
}

// newObjectType is an object with declared properties. Its smallest size counts the required
// fields without a default: they are in every request.
func newObjectType(s *crdv1.JSONSchemaProps, root bool, name string, objects map[string]*declType) *declType {
	props := s.Properties
	if root {
		props = withTypeAndObjectMeta(props)
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	t := &declType{cel: types.NewObjectType(name), fields: map[string]*declType{}, minSize: 2}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := props[n]
		ft := newDeclType(&p, p.XEmbeddedResource, name+"."+n, objects)
		if ft == nil {
			continue
		}
		// A rule reads a property by its escaped name (namespace as __namespace__, x-y as
		// x__dash__y), as kube-apiserver does; one that cannot be escaped is not accessible.
		if escapedName, ok := escapeProperty(n); ok {
			t.fields[escapedName] = ft
		}
		if required[n] && p.Default == nil {
			t.minSize += int64(len(n)) + ft.minSize + 4
		}
	}
	objects[name] = t
	return t
}

// withTypeAndObjectMeta adds what every resource has to a resource's root properties: kind and
// apiVersion, and metadata's name and generateName (the only metadata rules may read).
func withTypeAndObjectMeta(props map[string]crdv1.JSONSchemaProps) map[string]crdv1.JSONSchemaProps {
	out := make(map[string]crdv1.JSONSchemaProps, len(props)+3)
	for k, v := range props {
		out[k] = v
	}
	out["kind"] = crdv1.JSONSchemaProps{Type: "string"}
	out["apiVersion"] = crdv1.JSONSchemaProps{Type: "string"}
	out["metadata"] = crdv1.JSONSchemaProps{Type: "object", Properties: map[string]crdv1.JSONSchemaProps{
		"name": {Type: "string"}, "generateName": {Type: "string"},
	}}
	return out
}

// stringDeclType types a string by its format as kube-apiserver does (date and date-time are
// timestamps, duration a duration, byte bytes; rules get them converted, see celValues) and
// bounds it by maxLength (4 bytes a character at most, byte's in bytes), its longest enum value,
// its format's longest form, or the request size.
func stringDeclType(s *crdv1.JSONSchemaProps) *declType {
	t := &declType{cel: types.StringType, minSize: minStringSize, maxElements: maxRequestSizeBytes - 2}
	switch s.Format {
	case "byte":
		t.cel = types.BytesType
		if s.MaxLength != nil {
			t.maxElements = max(*s.MaxLength, 0)
		}
		return t
	case "duration":
		t.cel, t.minSize, t.maxElements = types.DurationType, minDurationSize, maxDurationSize
		return t
	case "date":
		t.cel, t.minSize, t.maxElements = types.TimestampType, jsonDateSize, jsonDateSize
		return t
	case "date-time":
		t.cel, t.minSize, t.maxElements = types.TimestampType, minDatetimeSize, maxDatetimeSize
		return t
	}
	switch {
	case s.MaxLength != nil:
		t.maxElements = max(*s.MaxLength, 0) * 4
	case len(s.Enum) > 0:
		t.maxElements = 0
		for _, e := range s.Enum {
			if len(e.Raw) > 2 && e.Raw[0] == '"' && int64(len(e.Raw)-2) > t.maxElements {
				t.maxElements = int64(len(e.Raw) - 2)
			}
		}
	}
	return t
}

// celReserved reports CEL's reserved words: no field name may be one (kube-apiserver escapes them).
func celReserved(name string) bool {
	switch name {
	case "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
		"if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while":
		return true
	}
	return false
}

// typeProvider resolves the object types of one rule scope for the checker and otherwise defers
// to the environment's own provider. Objects are plain maps at run time, so fields are read as
// map keys: no field getter is given.
type typeProvider struct {
	types.Provider
	objects map[string]*declType
}

func (p *typeProvider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := p.objects[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p *typeProvider) FindStructFieldNames(name string) ([]string, bool) {
	t, ok := p.objects[name]
	if !ok {
		return p.Provider.FindStructFieldNames(name)
	}
	names := make([]string, 0, len(t.fields))
	for n := range t.fields {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, true
}

func (p *typeProvider) FindStructFieldType(name, fieldName string) (*types.FieldType, bool) {
	t, ok := p.objects[name]
	if !ok {
		return p.Provider.FindStructFieldType(name, fieldName)
	}
	f, ok := t.fields[fieldName]
	if !ok {
		return nil, false
	}
	return &types.FieldType{Type: f.cel}, true
}

// NewValue refuses object literals of schema types: rules read objects, they do not build them.
func (p *typeProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.objects[name]; ok {
		return types.NewErr("cannot create an object of schema type %s", name)
	}
	return p.Provider.NewValue(name, fields)
}

// sizeEstimator gives the cost estimator the bounds of the values a rule reads: the checker
// names a value by its path from self or oldSelf (a field name, @items, @keys or @values a step).
type sizeEstimator struct {
	scope *declType
	calls checker.CostEstimator // the library's call costs
}

func (e *sizeEstimator) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	path := node.Path()
	if len(path) == 0 || (path[0] != "self" && path[0] != "oldSelf") {
		return nil
	}
	t := e.scope
	for _, step := range path[1:] {
		switch step {
		case "@items", "@values":
			t = t.elem
		case "@keys":
			// kube-apiserver types a map's keys with its one shared string type, whose maximum size
			// is never set (MaxElements 0), so it estimates every key at size 0: rules over keys
			// (Gateway API's infrastructure.annotations 'self.all(key, key.matches(...))') cost next
			// to nothing there, and a definition Kubernetes accepts must be accepted here.
			return &checker.SizeEstimate{Min: 0, Max: 0}
		default:
			t = t.fields[step]
		}
		if t == nil {
			return nil
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(t.maxElements)}
}

func (e *sizeEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if e.calls == nil {
		return nil
	}
	return e.calls.EstimateCallCost(function, overloadID, target, args)
}

// TypedVariables declares variables of one schema's CEL type: Names share the type, whose object
// types are named from TypeName (distinct for each schema of an environment).
type TypedVariables struct {
	Names    []string
	Schema   *crdv1.JSONSchemaProps
	TypeName string
}

// ExtendTyped is base with each variable typed by its schema as x-kubernetes-validations types a
// rule's self, so that a field the schema does not declare, or an operator its type has no
// overload for, fails to compile: what a ValidatingAdmissionPolicy's type checking reports. The
// schemas are a kind's whole published schema (apiVersion, kind and metadata declared in it). A
// schema that cannot be typed declares its variables dyn.
func ExtendTyped(base *cel.Env, vars ...TypedVariables) (*cel.Env, error) {
	objects := map[string]*declType{}
	opts := []cel.EnvOption{cel.CustomTypeProvider(&typeProvider{Provider: base.CELTypeProvider(), objects: objects})}
	for _, v := range vars {
		t := types.DynType
		if d := newDeclType(v.Schema, false, v.TypeName, objects); d != nil {
			t = d.cel
		}
		for _, name := range v.Names {
			opts = append(opts, cel.Variable(name, t))
		}
	}
	return base.Extend(opts...)
}
