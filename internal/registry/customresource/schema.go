package customresource

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	kcel "github.com/skiff-sh/skiff/internal/cel"
)

// Schema is one version's structural schema, ready to prune, default and validate objects.
type Schema struct {
	structural *crdv1.JSONSchemaProps
	validator  *validate.SchemaValidator
	openAPI    *spec.Schema
	// cel is the compiled rules, made at the first object validated: a control plane serves
	// every definition before it listens, and compiling their rules then took most of that
	// (the Gateway API's ten definitions: about 80 ms of CPU a start). A definition's rules
	// were compiled and their errors refused when it was written (ValidateRuleDefinitions).
	celOnce sync.Once
	cel     *celRules
	celErr  error
	// runtimeBudget is what all the rules may cost on one object (kcel.RuntimeCostBudget).
	runtimeBudget int64
}

// NewSchema prepares s (nil: every field is kept and nothing is checked, as for a schema-less
// version, which v1 does not allow but stored objects may still meet).
func NewSchema(s *crdv1.JSONSchemaProps) (*Schema, error) {
	if s == nil {
		return &Schema{}, nil
	}
	openAPI, err := ToOpenAPI(s)
	if err != nil {
		return nil, err
	}
	// The validator checks types, formats and bounds; Kubernetes' extensions are ours to handle.
	validator := validate.NewSchemaValidator(withoutExtensions(openAPI), nil, "", strfmt.Default)
	return &Schema{structural: s, validator: validator, openAPI: openAPI, runtimeBudget: kcel.RuntimeCostBudget}, nil
}

// rules compiles the schema's CEL rules once. Rules with errors were refused when the definition
// was written (ValidateRuleDefinitions); a stored definition that has them anyway runs the
// others. The error is the CEL environment's, which no definition causes.
func (s *Schema) rules() (*celRules, error) {
	s.celOnce.Do(func() {
		if s.structural != nil {
			s.cel, _, s.celErr = compileCEL(s.structural, field.NewPath("openAPIV3Schema"))
		}
	})
	return s.cel, s.celErr
}

// ToOpenAPI converts the schema to kube-openapi's form through their shared JSON shape.
func ToOpenAPI(s *crdv1.JSONSchemaProps) (*spec.Schema, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	out := &spec.Schema{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	return out, nil
}

// withoutExtensions returns a copy of s in which int-or-string fields accept both forms and
// embedded resources and preserved fields accept anything beyond what is declared; the validator
// does not know Kubernetes' extensions.
func withoutExtensions(s *spec.Schema) *spec.Schema {
	if s == nil {
		return nil
	}
	c := *s
	if v, ok := s.Extensions.GetBool("x-kubernetes-int-or-string"); ok && v {
		c.Type = nil
		c.AnyOf = []spec.Schema{{SchemaProps: spec.SchemaProps{Type: []string{"integer"}}}, {SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}
	}
	if s.Properties != nil {
		c.Properties = make(map[string]spec.Schema, len(s.Properties))
		for k, p := range s.Properties {
			c.Properties[k] = *withoutExtensions(&p)
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		c.Items = &spec.SchemaOrArray{Schema: withoutExtensions(s.Items.Schema)}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		c.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: withoutExtensions(s.AdditionalProperties.Schema)}
	}
	if v, ok := s.Extensions.GetBool("x-kubernetes-embedded-resource"); ok && v {
		// apiVersion, kind and metadata of an embedded object are checked as metadata, not here.
		c.Required = nil
	}
	return &c
}

// Validate checks obj against the schema with Kubernetes' field errors: the path, the offending
// value and kube-openapi's message, as kube-apiserver words them.
func (s *Schema) Validate(obj map[string]interface{}) field.ErrorList {
	if s.validator == nil {
		return nil
	}
	// metadata is validated as object metadata, not by the schema.
	content := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		if k != "metadata" {
			content[k] = v
		}
	}
	result := s.validator.Validate(content)
	var errs field.ErrorList
	for _, err := range result.Errors {
		errs = append(errs, toFieldErrors(err)...)
	}
	return append(errs, validateEmbedded(nil, s.structural, obj)...)
}

// validateEmbedded checks the objects marked x-kubernetes-embedded-resource: a non-empty one names
// its apiVersion and kind, as kube-apiserver requires.
func validateEmbedded(path *field.Path, s *crdv1.JSONSchemaProps, v interface{}) field.ErrorList {
	var errs field.ErrorList
	switch val := v.(type) {
	case map[string]interface{}:
		if s.XEmbeddedResource && len(val) > 0 {
			for _, k := range []string{"apiVersion", "kind"} {
				if str, _ := val[k].(string); str == "" {
					errs = append(errs, field.Required(path.Child(k), "must not be empty"))
				}
			}
		}
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := s.Properties[k]; ok {
				errs = append(errs, validateEmbedded(path.Child(k), &p, val[k])...)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				errs = append(errs, validateEmbedded(path.Child(k), s.AdditionalProperties.Schema, val[k])...)
			}
		}
	case []interface{}:
		if s.Items != nil && s.Items.Schema != nil {
			for i, item := range val {
				errs = append(errs, validateEmbedded(path.Index(i), s.Items.Schema, item)...)
			}
		}
	}
	return errs
}

// ValidateRules evaluates the schema's x-kubernetes-validations CEL rules on obj; old is the stored
// object on update (nil on create), for transition rules (those that use oldSelf).
func (s *Schema) ValidateRules(obj, old map[string]interface{}) field.ErrorList {
	rules, err := s.rules()
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	if rules == nil {
		return nil
	}
	value, _ := celValues(s.structural, obj)
	var oldValue interface{}
	if old != nil {
		oldValue, _ = celValues(s.structural, old)
	}
	run := &evaluation{rules: rules, remaining: s.runtimeBudget}
	return run.validate(nil, "", s.structural, value, oldValue, old != nil)
}

// ValidateValue checks any value (not only an object) against the schema, with paths relative to
// it: a default in a definition.
func (s *Schema) ValidateValue(v interface{}) field.ErrorList {
	if s.validator == nil {
		return nil
	}
	var errs field.ErrorList
	for _, err := range s.validator.Validate(v).Errors {
		errs = append(errs, toFieldErrors(err)...)
	}
	return errs
}

func toFieldErrors(err error) field.ErrorList {
	switch e := err.(type) {
	case *openapierrors.Validation:
		var errPath *field.Path // the root
		if name := strings.TrimPrefix(e.Name, "."); name != "" && name != "." {
			errPath = field.NewPath(name)
		}
		value := interface{}("")
		if e.Value != nil {
			value = e.Value
		}
		switch e.Code() {
		case openapierrors.RequiredFailCode:
			return field.ErrorList{field.Required(errPath, "")}
		case openapierrors.EnumFailCode:
			values := make([]string, 0, len(e.Values))
			for _, v := range e.Values {
				if s, ok := v.(string); ok {
					values = append(values, s)
					continue
				}
				data, _ := json.Marshal(v)
				values = append(values, string(data))
			}
			return field.ErrorList{field.NotSupported(errPath, value, values)}
		case openapierrors.TooLongFailCode:
			limit := int64(-1)
			if i, ok := e.Valid.(int64); ok {
				limit = i
			}
			return field.ErrorList{field.TooLongMaxLength(errPath, value, int(limit))}
		case openapierrors.MaxItemsFailCode:
			actual, limit := int64(-1), int64(-1)
			if i, ok := e.Value.(int64); ok {
				actual = i
			}
			if i, ok := e.Valid.(int64); ok {
				limit = i
			}
			return field.ErrorList{field.TooMany(errPath, int(actual), int(limit))}
		case openapierrors.InvalidTypeCode:
			return field.ErrorList{field.TypeInvalid(errPath, value, e.Error())}
		default:
			return field.ErrorList{field.Invalid(errPath, value, e.Error())}
		}
	case *openapierrors.CompositeError:
		var errs field.ErrorList
		for _, inner := range e.Errors {
			errs = append(errs, toFieldErrors(inner)...)
		}
		return errs
	default:
		return field.ErrorList{field.Invalid(nil, "", err.Error())}
	}
}

// Prune drops the fields the schema does not declare, below objects without
// x-kubernetes-preserve-unknown-fields, and returns their paths ("spec.bogus"), sorted. apiVersion,
// kind and metadata at the root (and of embedded resources) are always kept.
func (s *Schema) Prune(obj map[string]interface{}) []string {
	if s.structural == nil {
		return nil
	}
	var pruned []string
	pruneObject(obj, s.structural, true, "", &pruned)
	pruneMetadata(obj, "", &pruned)
	sort.Strings(pruned)
	return pruned
}

// objectMetaFields are the JSON fields of ObjectMeta: what metadata keeps, as decoding into
// ObjectMeta keeps only them in kube-apiserver.
var objectMetaFields = map[string]bool{
	"name": true, "generateName": true, "namespace": true, "selfLink": true, "uid": true,
	"resourceVersion": true, "generation": true, "creationTimestamp": true, "deletionTimestamp": true,
	"deletionGracePeriodSeconds": true, "labels": true, "annotations": true, "ownerReferences": true,
	"finalizers": true, "managedFields": true,
}

// pruneMetadata drops the fields of obj's metadata that ObjectMeta does not have.
func pruneMetadata(obj map[string]interface{}, path string, pruned *[]string) {
	md, ok := obj["metadata"].(map[string]interface{})
	if !ok {
		return
	}
	for k := range md {
		if !objectMetaFields[k] {
			delete(md, k)
			*pruned = append(*pruned, join(join(path, "metadata"), k))
		}
	}
}

func preserves(s *crdv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func pruneObject(obj map[string]interface{}, s *crdv1.JSONSchemaProps, root bool, path string, pruned *[]string) {
	for k, v := range obj {
		if (root || s.XEmbeddedResource) && (k == "apiVersion" || k == "kind" || k == "metadata") {
			continue
		}
		if p, ok := s.Properties[k]; ok {
			pruneValue(v, &p, join(path, k), pruned)
			if p.XEmbeddedResource {
				if m, isMap := v.(map[string]interface{}); isMap {
					pruneMetadata(m, join(path, k), pruned)
				}
			}
			continue
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			pruneValue(v, s.AdditionalProperties.Schema, join(path, k), pruned)
			continue
		}
		if preserves(s) || (s.AdditionalProperties != nil && s.AdditionalProperties.Allows) {
			continue
		}
		delete(obj, k)
		*pruned = append(*pruned, join(path, k))
	}
}

func pruneValue(v interface{}, s *crdv1.JSONSchemaProps, path string, pruned *[]string) {
	switch val := v.(type) {
	case map[string]interface{}:
		if s.XIntOrString {
			return
		}
		pruneObject(val, s, false, path, pruned)
	case []interface{}:
		if s.Items != nil && s.Items.Schema != nil {
			for i, item := range val {
				pruneValue(item, s.Items.Schema, fmt.Sprintf("%s[%d]", path, i), pruned)
			}
		}
	}
}

// Default sets the schema's defaults on obj where fields are missing, as kube-apiserver does, both
// on write and on read from storage. A default is set only inside objects that exist. A field
// that is null though its schema is not nullable is defaulted when it has a default and dropped
// when it has none, as kube-apiserver prunes such nulls before validating (a client that sends
// `addresses: null` for an optional array is not refused for it).
func (s *Schema) Default(obj map[string]interface{}) {
	if s.structural == nil {
		return
	}
	defaultObject(obj, s.structural)
}

func defaultObject(obj map[string]interface{}, s *crdv1.JSONSchemaProps) {
	for k, p := range s.Properties {
		if v, ok := obj[k]; ok && v == nil && !p.Nullable {
			delete(obj, k) // defaulted below when it has a default, else gone
		}
		if _, ok := obj[k]; !ok && p.Default != nil && len(p.Default.Raw) > 0 {
			var v interface{}
			if err := json.Unmarshal(p.Default.Raw, &v); err == nil {
				obj[k] = normalize(v)
			}
		}
		if v, ok := obj[k]; ok {
			defaultValue(v, &p)
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		for k, v := range obj {
			if _, declared := s.Properties[k]; declared {
				continue
			}
			if v == nil && !s.AdditionalProperties.Schema.Nullable && s.AdditionalProperties.Schema.Default == nil {
				delete(obj, k)
				continue
			}
			defaultValue(v, s.AdditionalProperties.Schema)
		}
	}
}

func defaultValue(v interface{}, s *crdv1.JSONSchemaProps) {
	switch val := v.(type) {
	case map[string]interface{}:
		defaultObject(val, s)
	case []interface{}:
		if s.Items != nil && s.Items.Schema != nil {
			for _, item := range val {
				defaultValue(item, s.Items.Schema)
			}
		}
	}
}

// normalize turns JSON numbers decoded as float64 into int64 where they are whole, as unstructured
// objects hold integers.
func normalize(v interface{}) interface{} {
	switch val := v.(type) {
	case float64:
		if val == float64(int64(val)) {
			return int64(val)
		}
		return val
	case map[string]interface{}:
		for k, x := range val {
			val[k] = normalize(x)
		}
		return val
	case []interface{}:
		for i, x := range val {
			val[i] = normalize(x)
		}
		return val
	}
	return v
}
