package apiextensions

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/registry/customresource"
)

// The values upstream accepts for printer columns.
var (
	printerColumnTypes   = []string{"array", "boolean", "date", "integer", "number", "object", "string"}
	printerColumnFormats = []string{"int32", "int64", "float", "double", "byte", "date", "date-time", "password"}
)

// ValidateCustomResourceDefinition checks a definition as kube-apiserver does, with its messages.
// Metadata is checked by the generic strategy; the name rule (plural.group) is here.
func ValidateCustomResourceDefinition(c *crdv1.CustomResourceDefinition) field.ErrorList {
	return validateDefinition(c, nil)
}

// ValidateCustomResourceDefinitionUpdate checks an updated definition: as a new one, except that
// the x-kubernetes-validations of a version whose schema did not change are not judged again
// (compilation, cost). kube-apiserver likewise stops charging an unchanged schema's rules
// against the per-expression limit; here it also keeps a definition stored by an older skiff,
// which took rules it now refuses, updatable (its finalizer removed on deletion, its labels set).
func ValidateCustomResourceDefinitionUpdate(c, old *crdv1.CustomResourceDefinition) field.ErrorList {
	unchanged := map[string]bool{}
	for _, ov := range old.Spec.Versions {
		for _, v := range c.Spec.Versions {
			if v.Name == ov.Name && apiequality.Semantic.DeepEqual(v.Schema, ov.Schema) {
				unchanged[v.Name] = true
			}
		}
	}
	return validateDefinition(c, unchanged)
}

// validateDefinition checks c; the rules of the versions named in rulesAccepted are not.
func validateDefinition(c *crdv1.CustomResourceDefinition, rulesAccepted map[string]bool) field.ErrorList {
	var errs field.ErrorList
	if c.Name != c.Spec.Names.Plural+"."+c.Spec.Group {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, `must be spec.names.plural+"."+spec.group`))
	}
	errs = append(errs, validateSpec(&c.Spec, field.NewPath("spec"), rulesAccepted)...)
	errs = append(errs, validateStatus(c)...)
	return errs
}

func validateSpec(spec *crdv1.CustomResourceDefinitionSpec, fld *field.Path, rulesAccepted map[string]bool) field.ErrorList {
	var errs field.ErrorList
	if spec.Group == "" {
		errs = append(errs, field.Required(fld.Child("group"), ""))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(spec.Group) {
			errs = append(errs, field.Invalid(fld.Child("group"), spec.Group, msg))
		}
		if len(strings.Split(spec.Group, ".")) < 2 {
			errs = append(errs, field.Invalid(fld.Child("group"), spec.Group, "should be a domain with at least one dot"))
		}
	}
	switch spec.Scope {
	case "":
		errs = append(errs, field.Required(fld.Child("scope"), ""))
	case crdv1.ClusterScoped, crdv1.NamespaceScoped:
	default:
		errs = append(errs, field.NotSupported(fld.Child("scope"), spec.Scope, []string{string(crdv1.ClusterScoped), string(crdv1.NamespaceScoped)}))
	}
	errs = append(errs, validateNames(&spec.Names, fld.Child("names"))...)
	errs = append(errs, validateVersions(spec, fld.Child("versions"), rulesAccepted)...)
	errs = append(errs, validateConversion(spec.Conversion, fld.Child("conversion"))...)
	if spec.PreserveUnknownFields {
		errs = append(errs, field.Invalid(fld.Child("preserveUnknownFields"), spec.PreserveUnknownFields, "must be false in order to use defaults in the schema"))
	}
	return errs
}

func validateNames(names *crdv1.CustomResourceDefinitionNames, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if names.Plural == "" {
		errs = append(errs, field.Required(fld.Child("plural"), ""))
	} else {
		for _, msg := range utilvalidation.IsDNS1035Label(names.Plural) {
			errs = append(errs, field.Invalid(fld.Child("plural"), names.Plural, msg))
		}
	}
	if names.Singular != "" {
		for _, msg := range utilvalidation.IsDNS1035Label(names.Singular) {
			errs = append(errs, field.Invalid(fld.Child("singular"), names.Singular, msg))
		}
	}
	if names.Kind == "" {
		errs = append(errs, field.Required(fld.Child("kind"), ""))
	} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(names.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fld.Child("kind"), names.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	if names.ListKind != "" {
		if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(names.ListKind)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fld.Child("listKind"), names.ListKind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
		}
		if names.ListKind == names.Kind {
			errs = append(errs, field.Invalid(fld.Child("listKind"), names.ListKind, "kind and listKind may not be the same"))
		}
	}
	for i, short := range names.ShortNames {
		for _, msg := range utilvalidation.IsDNS1035Label(short) {
			errs = append(errs, field.Invalid(fld.Child("shortNames").Index(i), short, msg))
		}
	}
	for i, cat := range names.Categories {
		for _, msg := range utilvalidation.IsDNS1035Label(cat) {
			errs = append(errs, field.Invalid(fld.Child("categories").Index(i), cat, msg))
		}
	}
	return errs
}

func validateVersions(spec *crdv1.CustomResourceDefinitionSpec, fld *field.Path, rulesAccepted map[string]bool) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Versions) == 0 {
		return append(errs, field.Invalid(fld, spec.Versions, "must have exactly one version marked as storage version"))
	}
	storage, served := 0, false
	seen := sets.New[string]()
	for i, v := range spec.Versions {
		vf := fld.Index(i)
		if v.Storage {
			storage++
		}
		served = served || v.Served
		if seen.Has(v.Name) {
			errs = append(errs, field.Invalid(fld, spec.Versions, "must contain unique version names"))
		}
		seen.Insert(v.Name)
		for _, msg := range utilvalidation.IsDNS1035Label(v.Name) {
			errs = append(errs, field.Invalid(vf.Child("name"), v.Name, msg))
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, field.Required(vf.Child("schema", "openAPIV3Schema"), "schemas are required"))
		} else {
			errs = append(errs, validateStructural(v.Schema.OpenAPIV3Schema, vf.Child("schema", "openAPIV3Schema"), !rulesAccepted[v.Name])...)
		}
		errs = append(errs, validateSubresources(v.Subresources, vf.Child("subresources"))...)
		errs = append(errs, validateColumns(v.AdditionalPrinterColumns, vf.Child("additionalPrinterColumns"))...)
		for j, sf := range v.SelectableFields {
			if sf.JSONPath == "" {
				errs = append(errs, field.Required(vf.Child("selectableFields").Index(j).Child("jsonPath"), ""))
			} else if err := validateSimpleJSONPath(sf.JSONPath); err != "" {
				errs = append(errs, field.Invalid(vf.Child("selectableFields").Index(j).Child("jsonPath"), sf.JSONPath, err))
			}
		}
	}
	if storage != 1 {
		errs = append(errs, field.Invalid(fld, spec.Versions, "must have exactly one version marked as storage version"))
	}
	if !served {
		errs = append(errs, field.Invalid(fld, spec.Versions, "must have at least one version marked as served"))
	}
	return errs
}

func validateSubresources(sub *crdv1.CustomResourceSubresources, fld *field.Path) field.ErrorList {
	if sub == nil || sub.Scale == nil {
		return nil
	}
	var errs field.ErrorList
	scale, sf := sub.Scale, fld.Child("scale")
	if scale.SpecReplicasPath == "" {
		errs = append(errs, field.Required(sf.Child("specReplicasPath"), ""))
	} else if !strings.HasPrefix(scale.SpecReplicasPath, ".spec.") || validateSimpleJSONPath(scale.SpecReplicasPath) != "" {
		errs = append(errs, field.Invalid(sf.Child("specReplicasPath"), scale.SpecReplicasPath, "should be a json path under .spec"))
	}
	if scale.StatusReplicasPath == "" {
		errs = append(errs, field.Required(sf.Child("statusReplicasPath"), ""))
	} else if !strings.HasPrefix(scale.StatusReplicasPath, ".status.") || validateSimpleJSONPath(scale.StatusReplicasPath) != "" {
		errs = append(errs, field.Invalid(sf.Child("statusReplicasPath"), scale.StatusReplicasPath, "should be a json path under .status"))
	}
	if p := scale.LabelSelectorPath; p != nil && *p != "" {
		if (!strings.HasPrefix(*p, ".spec.") && !strings.HasPrefix(*p, ".status.")) || validateSimpleJSONPath(*p) != "" {
			errs = append(errs, field.Invalid(sf.Child("labelSelectorPath"), *p, "should be a json path under either .spec or .status"))
		}
	}
	return errs
}

func validateColumns(cols []crdv1.CustomResourceColumnDefinition, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, col := range cols {
		cf := fld.Index(i)
		if col.Name == "" {
			errs = append(errs, field.Required(cf.Child("name"), ""))
		}
		if col.Type == "" {
			errs = append(errs, field.Required(cf.Child("type"), fmt.Sprintf("must be one of %s", strings.Join(printerColumnTypes, ", "))))
		} else if !sets.New(printerColumnTypes...).Has(col.Type) {
			errs = append(errs, field.NotSupported(cf.Child("type"), col.Type, printerColumnTypes))
		}
		if col.Format != "" && !sets.New(printerColumnFormats...).Has(col.Format) {
			errs = append(errs, field.NotSupported(cf.Child("format"), col.Format, printerColumnFormats))
		}
		if col.JSONPath == "" {
			errs = append(errs, field.Required(cf.Child("jsonPath"), ""))
		} else if msg := validateSimpleJSONPath(col.JSONPath); msg != "" {
			errs = append(errs, field.Invalid(cf.Child("jsonPath"), col.JSONPath, msg))
		}
	}
	return errs
}

// validateSimpleJSONPath accepts what kubectl's JSONPath parses and starts with a dot.
func validateSimpleJSONPath(path string) string {
	if !strings.HasPrefix(path, ".") {
		return "must be a simple json path starting with ."
	}
	if err := jsonpath.New("").Parse("{" + path + "}"); err != nil {
		return "must be a simple json path starting with ."
	}
	return ""
}

func validateConversion(conv *crdv1.CustomResourceConversion, fld *field.Path) field.ErrorList {
	if conv == nil {
		return nil
	}
	var errs field.ErrorList
	switch conv.Strategy {
	case crdv1.NoneConverter:
		if conv.Webhook != nil {
			errs = append(errs, field.Forbidden(fld.Child("webhook"), "should not be set when strategy is not set to Webhook"))
		}
	case crdv1.WebhookConverter:
		if conv.Webhook == nil {
			return append(errs, field.Required(fld.Child("webhook"), "required when strategy is set to Webhook"))
		}
		wf := fld.Child("webhook")
		if conv.Webhook.ClientConfig == nil {
			errs = append(errs, field.Required(wf.Child("clientConfig"), "required when strategy is set to Webhook"))
		} else {
			cc := conv.Webhook.ClientConfig
			switch {
			case (cc.URL == nil) == (cc.Service == nil):
				errs = append(errs, field.Required(wf.Child("clientConfig"), "exactly one of url or service is required"))
			case cc.Service != nil:
				sf := wf.Child("clientConfig", "service")
				if cc.Service.Name == "" {
					errs = append(errs, field.Required(sf.Child("name"), "service name is required"))
				}
				if cc.Service.Namespace == "" {
					errs = append(errs, field.Required(sf.Child("namespace"), "service namespace is required"))
				}
				if p := cc.Service.Port; p != nil && (*p < 1 || *p > 65535) {
					errs = append(errs, field.Invalid(sf.Child("port"), *p, "port is not valid: must be between 1 and 65535, inclusive"))
				}
			case cc.URL != nil && !strings.HasPrefix(*cc.URL, "https://"):
				errs = append(errs, field.Invalid(wf.Child("clientConfig", "url"), *cc.URL, "'https' is the only allowed URL scheme"))
			}
		}
		if len(conv.Webhook.ConversionReviewVersions) == 0 {
			errs = append(errs, field.Required(wf.Child("conversionReviewVersions"), "must include at least one of v1, v1beta1"))
		} else if !sets.New(conv.Webhook.ConversionReviewVersions...).HasAny("v1", "v1beta1") {
			errs = append(errs, field.Invalid(wf.Child("conversionReviewVersions"), conv.Webhook.ConversionReviewVersions, "must include at least one of v1, v1beta1"))
		}
	default:
		errs = append(errs, field.NotSupported(fld.Child("strategy"), conv.Strategy, []string{string(crdv1.NoneConverter), string(crdv1.WebhookConverter)}))
	}
	return errs
}

func validateStatus(c *crdv1.CustomResourceDefinition) field.ErrorList {
	var errs field.ErrorList
	fld := field.NewPath("status", "storedVersions")
	if len(c.Status.StoredVersions) == 0 {
		return append(errs, field.Invalid(fld, c.Status.StoredVersions, "must have at least one stored version"))
	}
	versions := sets.New[string]()
	for _, v := range c.Spec.Versions {
		versions.Insert(v.Name)
	}
	for i, v := range c.Status.StoredVersions {
		if !versions.Has(v) {
			errs = append(errs, field.Invalid(fld.Index(i), v, "must appear in spec.versions"))
		}
	}
	for _, v := range c.Spec.Versions {
		if v.Storage && !sets.New(c.Status.StoredVersions...).Has(v.Name) {
			errs = append(errs, field.Invalid(fld, c.Status.StoredVersions, "must have the storage version "+v.Name))
		}
	}
	return errs
}

// ValidateStructural checks that a schema is structural, as Kubernetes requires of v1 definitions:
// every specified field has a type, arrays have items, the root is an object and metadata at the
// root declares at most name and generateName.
func ValidateStructural(s *crdv1.JSONSchemaProps, fld *field.Path) field.ErrorList {
	return validateStructural(s, fld, true)
}

// validateStructural is ValidateStructural; checkRules false leaves the rules' compilation and
// cost alone (a schema an update did not change).
func validateStructural(s *crdv1.JSONSchemaProps, fld *field.Path, checkRules bool) field.ErrorList {
	var errs field.ErrorList
	switch s.Type {
	case "object":
	case "":
		errs = append(errs, field.Required(fld.Child("type"), "must not be empty at the root"))
	default:
		errs = append(errs, field.Invalid(fld.Child("type"), s.Type, "must be object at the root"))
	}
	if md, ok := s.Properties["metadata"]; ok {
		mf := fld.Child("properties").Key("metadata")
		if md.Type != "object" {
			errs = append(errs, field.Invalid(mf.Child("type"), md.Type, "must be object"))
		}
		for name, p := range md.Properties {
			if (name != "name" && name != "generateName") || p.Type != "string" {
				errs = append(errs, field.Forbidden(mf, "must not specify anything other than name and generateName, but metadata is implicitly specified"))
				break
			}
		}
	}
	errs = append(errs, validateStructuralNode(s, fld, true)...)
	if len(errs) > 0 || !checkRules {
		// As kube-apiserver: the rules are typed from the schema, and a schema with errors gives
		// types (and so rule errors) nobody could act on.
		return errs
	}
	return customresource.ValidateRuleDefinitions(s, fld)
}

// validateIntOrString: x-kubernetes-int-or-string may sit beside a type (the VolumeSnapshot CRD's
// restoreSize has type: string), as Kubernetes accepts; what it may not sit beside is pruning's
// opt-outs.
func validateIntOrString(s *crdv1.JSONSchemaProps, fld *field.Path) field.ErrorList {
	if !s.XIntOrString {
		return nil
	}
	var errs field.ErrorList
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		errs = append(errs, field.Invalid(fld.Child("x-kubernetes-preserve-unknown-fields"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	if s.XEmbeddedResource {
		errs = append(errs, field.Invalid(fld.Child("x-kubernetes-embedded-resource"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	return errs
}

func validateStructuralNode(s *crdv1.JSONSchemaProps, fld *field.Path, root bool) field.ErrorList {
	var errs field.ErrorList
	if s.Ref != nil {
		errs = append(errs, field.Forbidden(fld.Child("$ref"), "$ref is not supported"))
	}
	errs = append(errs, validateIntOrString(s, fld)...)
	if s.Type == "array" && s.Items == nil {
		errs = append(errs, field.Required(fld.Child("items"), "must be specified"))
	}
	if s.Items != nil && len(s.Items.JSONSchemas) > 0 {
		errs = append(errs, field.Forbidden(fld.Child("items"), "items must be a schema object and not an array"))
	}
	if s.AdditionalProperties != nil && len(s.Properties) > 0 {
		errs = append(errs, field.Forbidden(fld.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
	}
	if s.XListType != nil {
		switch *s.XListType {
		case "atomic", "set", "map":
		default:
			errs = append(errs, field.NotSupported(fld.Child("x-kubernetes-list-type"), *s.XListType, []string{"atomic", "set", "map"}))
		}
		if *s.XListType == "map" && len(s.XListMapKeys) == 0 {
			errs = append(errs, field.Required(fld.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
		}
	}
	for i, rule := range s.XValidations {
		rf := fld.Child("x-kubernetes-validations").Index(i)
		// The expressions are compiled against the whole schema's types once it is valid
		// (customresource.ValidateRuleDefinitions, from ValidateStructural).
		if rule.Rule == "" {
			errs = append(errs, field.Required(rf.Child("rule"), "rule is not specified"))
		}
		if rule.Reason != nil {
			switch *rule.Reason {
			case "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate":
			default:
				errs = append(errs, field.NotSupported(rf.Child("reason"), *rule.Reason, []string{"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"}))
			}
		}
	}
	if s.XEmbeddedResource && s.Type != "object" {
		errs = append(errs, field.Invalid(fld.Child("type"), s.Type, "must be object if x-kubernetes-embedded-resource is true"))
	}
	if s.Default != nil && len(s.Default.Raw) > 0 {
		errs = append(errs, validateDefault(s, fld.Child("default"))...)
	}
	untyped := func(p *crdv1.JSONSchemaProps) bool {
		return p.Type == "" && !p.XIntOrString && (p.XPreserveUnknownFields == nil || !*p.XPreserveUnknownFields)
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := s.Properties[name]
		pf := fld.Child("properties").Key(name)
		if untyped(&p) {
			errs = append(errs, field.Required(pf.Child("type"), "must not be empty for specified object fields"))
		}
		if root && name == "metadata" {
			continue
		}
		errs = append(errs, validateStructuralNode(&p, pf, false)...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		if untyped(s.Items.Schema) {
			errs = append(errs, field.Required(fld.Child("items").Child("type"), "must not be empty for specified array items"))
		}
		errs = append(errs, validateStructuralNode(s.Items.Schema, fld.Child("items"), false)...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		ap := s.AdditionalProperties.Schema
		if untyped(ap) {
			errs = append(errs, field.Required(fld.Child("additionalProperties").Child("type"), "must not be empty for specified object fields"))
		}
		errs = append(errs, validateStructuralNode(ap, fld.Child("additionalProperties"), false)...)
	}
	return errs
}

// validateDefault checks a default against the schema it sits in, as kube-apiserver does when a
// definition is written: a default that would make objects invalid is refused.
func validateDefault(s *crdv1.JSONSchemaProps, fld *field.Path) field.ErrorList {
	var value interface{}
	if err := json.Unmarshal(s.Default.Raw, &value); err != nil {
		return field.ErrorList{field.Invalid(fld, string(s.Default.Raw), "must be valid JSON")}
	}
	// The default is checked against this node alone: its own default and those below are its
	// business, not the value's.
	node := *s
	node.Default = nil
	node.XValidations = nil
	sch, err := customresource.NewSchema(&node)
	if err != nil {
		return field.ErrorList{field.Invalid(fld, string(s.Default.Raw), err.Error())}
	}
	var errs field.ErrorList
	for _, e := range sch.ValidateValue(value) {
		if rel := strings.TrimPrefix(e.Field, "<nil>"); rel != "" {
			e.Field = fld.String() + "." + rel
		} else {
			e.Field = fld.String()
		}
		errs = append(errs, e)
	}
	return errs
}
