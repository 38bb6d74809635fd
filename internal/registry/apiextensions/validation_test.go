package apiextensions

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func validCRD() *crdv1.CustomResourceDefinition {
	c := &crdv1.CustomResourceDefinition{}
	c.Name = "widgets.example.com"
	c.Spec = crdv1.CustomResourceDefinitionSpec{
		Group: "example.com", Scope: crdv1.NamespaceScoped,
		Names: crdv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
		Versions: []crdv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &crdv1.CustomResourceValidation{OpenAPIV3Schema: &crdv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]crdv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: map[string]crdv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
				},
			}},
		}},
	}
	SetDefaults(c)
	c.Status.StoredVersions = []string{"v1"}
	return c
}

func TestValidateCustomResourceDefinition(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(c *crdv1.CustomResourceDefinition)
		want   *errtest.Want
	}{
		{name: "valid", mutate: func(*crdv1.CustomResourceDefinition) {}},
		{name: "name", mutate: func(c *crdv1.CustomResourceDefinition) { c.Name = "gadgets.example.com" },
			want: &errtest.Want{Field: "metadata.name", Type: field.ErrorTypeInvalid, Detail: `must be spec.names.plural+"."+spec.group`}},
		{name: "group without dot", mutate: func(c *crdv1.CustomResourceDefinition) { c.Spec.Group = "example"; c.Name = "widgets.example" },
			want: &errtest.Want{Field: "spec.group", Type: field.ErrorTypeInvalid, Detail: "should be a domain with at least one dot"}},
		{name: "scope", mutate: func(c *crdv1.CustomResourceDefinition) { c.Spec.Scope = "Global" },
			want: &errtest.Want{Field: "spec.scope", Type: field.ErrorTypeNotSupported, Detail: `supported values: "Cluster", "Namespaced"`}},
		{name: "two storage versions", mutate: func(c *crdv1.CustomResourceDefinition) {
			v := c.Spec.Versions[0]
			v.Name = "v2"
			c.Spec.Versions = append(c.Spec.Versions, v)
		}, want: &errtest.Want{Field: "spec.versions", Type: field.ErrorTypeInvalid, Detail: "must have exactly one version marked as storage version"}},
		{name: "none served", mutate: func(c *crdv1.CustomResourceDefinition) { c.Spec.Versions[0].Served = false },
			want: &errtest.Want{Field: "spec.versions", Type: field.ErrorTypeInvalid, Detail: "must have at least one version marked as served"}},
		{name: "schema required", mutate: func(c *crdv1.CustomResourceDefinition) { c.Spec.Versions[0].Schema = nil },
			want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema", Type: field.ErrorTypeRequired, Detail: "schemas are required"}},
		{name: "not structural", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = crdv1.JSONSchemaProps{}
		}, want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.properties[spec].type", Type: field.ErrorTypeRequired, Detail: "must not be empty for specified object fields"}},
		{name: "array without items", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["list"] = crdv1.JSONSchemaProps{Type: "array"}
		}, want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.properties[list].items", Type: field.ErrorTypeRequired, Detail: "must be specified"}},
		{name: "int-or-string beside a type, as the VolumeSnapshot CRD's restoreSize", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["size"] = crdv1.JSONSchemaProps{Type: "string", XIntOrString: true}
		}},
		{name: "int-or-string preserving unknown fields", mutate: func(c *crdv1.CustomResourceDefinition) {
			yes := true
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["size"] = crdv1.JSONSchemaProps{XIntOrString: true, XPreserveUnknownFields: &yes}
		}, want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.properties[size].x-kubernetes-preserve-unknown-fields", Type: field.ErrorTypeInvalid, Detail: "must be false if x-kubernetes-int-or-string is true"}},
		{name: "kind", mutate: func(c *crdv1.CustomResourceDefinition) { c.Spec.Names.Kind = "" },
			want: &errtest.Want{Field: "spec.names.kind", Type: field.ErrorTypeRequired}},
		{name: "printer column type", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns = []crdv1.CustomResourceColumnDefinition{{Name: "R", Type: "float", JSONPath: ".spec.replicas"}}
		}, want: &errtest.Want{Field: "spec.versions[0].additionalPrinterColumns[0].type", Type: field.ErrorTypeNotSupported}},
		{name: "printer column path", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns = []crdv1.CustomResourceColumnDefinition{{Name: "R", Type: "integer", JSONPath: "spec.replicas"}}
		}, want: &errtest.Want{Field: "spec.versions[0].additionalPrinterColumns[0].jsonPath", Type: field.ErrorTypeInvalid, Detail: "must be a simple json path starting with ."}},
		{name: "webhook without config", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Conversion = &crdv1.CustomResourceConversion{Strategy: crdv1.WebhookConverter}
		}, want: &errtest.Want{Field: "spec.conversion.webhook", Type: field.ErrorTypeRequired, Detail: "required when strategy is set to Webhook"}},
		{name: "scale path", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Subresources = &crdv1.CustomResourceSubresources{Scale: &crdv1.CustomResourceSubresourceScale{SpecReplicasPath: ".status.r", StatusReplicasPath: ".status.r"}}
		}, want: &errtest.Want{Field: "spec.versions[0].subresources.scale.specReplicasPath", Type: field.ErrorTypeInvalid, Detail: "should be a json path under .spec"}},
		{name: "rule does not compile", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.XValidations = []crdv1.ValidationRule{{Rule: "self.spec.replicas >"}}
		}, want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule", Type: field.ErrorTypeInvalid, Detail: "compilation failed: "}},
		{name: "rule naming an undeclared field", mutate: func(c *crdv1.CustomResourceDefinition) {
			spec := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			spec.XValidations = []crdv1.ValidationRule{{Rule: "self.z == 100"}}
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		}, want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule", Type: field.ErrorTypeInvalid, Detail: "undefined field 'z'"}},
		{name: "rule over the estimated cost limit", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["names"] = crdv1.JSONSchemaProps{Type: "array",
				Items: &crdv1.JSONSchemaPropsOrArray{Schema: &crdv1.JSONSchemaProps{Type: "array", Items: &crdv1.JSONSchemaPropsOrArray{Schema: &crdv1.JSONSchemaProps{Type: "string"}},
					XValidations: []crdv1.ValidationRule{{Rule: "self.all(s, s == 'string constant')"}}}}}
		}, want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[names].items.x-kubernetes-validations[0].rule", Type: field.ErrorTypeForbidden, Detail: "estimated rule cost exceeds budget by factor of more than 100x"}},
		{name: "unsupported reason", mutate: func(c *crdv1.CustomResourceDefinition) {
			spec := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			spec.XValidations = []crdv1.ValidationRule{{Rule: "self.z == 100", Reason: ptr.To("Bogus")}}
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		}, want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].reason", Type: field.ErrorTypeNotSupported}},
		{name: "default of the wrong type", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicas"] = crdv1.JSONSchemaProps{Type: "integer", Default: &crdv1.JSON{Raw: []byte(`"three"`)}}
		}, want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].default", Type: field.ErrorTypeTypeInvalid, Detail: "must be of type integer"}},
		{name: "object default checked inside", mutate: func(c *crdv1.CustomResourceDefinition) {
			spec := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			spec.Default = &crdv1.JSON{Raw: []byte(`{"replicas":"x"}`)}
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		}, want: &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.properties[spec].default.replicas", Type: field.ErrorTypeTypeInvalid, Detail: "must be of type integer"}},
		{name: "default valid", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["replicas"] = crdv1.JSONSchemaProps{Type: "integer", Default: &crdv1.JSON{Raw: []byte(`3`)}}
		}},
		{name: "stored version", mutate: func(c *crdv1.CustomResourceDefinition) { c.Status.StoredVersions = []string{"v9"} },
			want: &errtest.Want{Field: "status.storedVersions[0]", Type: field.ErrorTypeInvalid, Detail: "must appear in spec.versions"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validCRD()
			tc.mutate(c)
			errtest.Check(t, ValidateCustomResourceDefinition(c), tc.want)
		})
	}
}

// TestValidateCustomResourceDefinitionUpdate checks that an update judges the rules of the
// schemas it changes, not those of a schema it leaves as stored: a definition an older skiff took
// with a rule it now refuses can still be relabelled, and have its finalizer removed.
func TestValidateCustomResourceDefinitionUpdate(t *testing.T) {
	stored := func() *crdv1.CustomResourceDefinition {
		c := validCRD()
		spec := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		spec.XValidations = []crdv1.ValidationRule{{Rule: "self.z == 100"}} // z is not declared
		c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		c.ResourceVersion = "7"
		return c
	}
	ruleErr := &errtest.Want{Field: "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule", Type: field.ErrorTypeInvalid, Detail: "undefined field 'z'"}
	for _, tc := range []struct {
		name   string
		mutate func(c *crdv1.CustomResourceDefinition)
		want   *errtest.Want
	}{
		{name: "labels only", mutate: func(c *crdv1.CustomResourceDefinition) { c.Labels = map[string]string{"a": "b"} }},
		{name: "schema changed", mutate: func(c *crdv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"] = crdv1.JSONSchemaProps{Type: "string"}
		}, want: ruleErr},
		{name: "group is immutable", mutate: func(c *crdv1.CustomResourceDefinition) { c.Spec.Group = "other.com"; c.Name = "widgets.other.com" },
			want: &errtest.Want{Field: "spec.group", Type: field.ErrorTypeInvalid, Detail: "field is immutable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if errs := ValidateCustomResourceDefinition(stored()); len(errs) == 0 {
				t.Fatal("the stored definition's rule should be refused on create")
			}
			c := stored()
			tc.mutate(c)
			for _, r := range Resources() {
				errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), c, stored()), tc.want)
			}
		})
	}
}
