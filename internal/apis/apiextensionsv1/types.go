package apiextensionsv1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of CustomResourceDefinitions.
const GroupName = "apiextensions.k8s.io"

// SchemeGroupVersion is apiextensions.k8s.io/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// AddToScheme registers the types of apiextensions.k8s.io/v1 and the group's meta types.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &CustomResourceDefinition{}, &CustomResourceDefinitionList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// CustomResourceDefinition declares a resource served from a schema.
type CustomResourceDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CustomResourceDefinitionSpec   `json:"spec"`
	Status            CustomResourceDefinitionStatus `json:"status,omitempty"`
}

// CustomResourceDefinitionList is a list of CustomResourceDefinitions.
type CustomResourceDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CustomResourceDefinition `json:"items"`
}

// CustomResourceDefinitionSpec is the declared resource.
type CustomResourceDefinitionSpec struct {
	Group                 string                            `json:"group"`
	Names                 CustomResourceDefinitionNames     `json:"names"`
	Scope                 ResourceScope                     `json:"scope"`
	Versions              []CustomResourceDefinitionVersion `json:"versions"`
	Conversion            *CustomResourceConversion         `json:"conversion,omitempty"`
	PreserveUnknownFields bool                              `json:"preserveUnknownFields,omitempty"`
}

// CustomResourceDefinitionNames are the names of the served resource.
type CustomResourceDefinitionNames struct {
	Plural     string   `json:"plural"`
	Singular   string   `json:"singular,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Kind       string   `json:"kind"`
	ListKind   string   `json:"listKind,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// ResourceScope is Cluster or Namespaced.
type ResourceScope string

// The scopes.
const (
	ClusterScoped   ResourceScope = "Cluster"
	NamespaceScoped ResourceScope = "Namespaced"
)

// ConversionStrategyType is None or Webhook.
type ConversionStrategyType string

// The conversion strategies.
const (
	NoneConverter    ConversionStrategyType = "None"
	WebhookConverter ConversionStrategyType = "Webhook"
)

// CustomResourceConversion says how objects are converted between versions.
type CustomResourceConversion struct {
	Strategy ConversionStrategyType `json:"strategy"`
	Webhook  *WebhookConversion     `json:"webhook,omitempty"`
}

// WebhookConversion configures a conversion webhook.
type WebhookConversion struct {
	ClientConfig             *WebhookClientConfig `json:"clientConfig,omitempty"`
	ConversionReviewVersions []string             `json:"conversionReviewVersions"`
}

// WebhookClientConfig reaches a webhook by URL or service.
type WebhookClientConfig struct {
	URL      *string           `json:"url,omitempty"`
	Service  *ServiceReference `json:"service,omitempty"`
	CABundle []byte            `json:"caBundle,omitempty"`
}

// ServiceReference names a service in the cluster.
type ServiceReference struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Path      *string `json:"path,omitempty"`
	Port      *int32  `json:"port,omitempty"`
}

// CustomResourceDefinitionVersion is one version of the resource.
type CustomResourceDefinitionVersion struct {
	Name                     string                           `json:"name"`
	Served                   bool                             `json:"served"`
	Storage                  bool                             `json:"storage"`
	Deprecated               bool                             `json:"deprecated,omitempty"`
	DeprecationWarning       *string                          `json:"deprecationWarning,omitempty"`
	Schema                   *CustomResourceValidation        `json:"schema,omitempty"`
	Subresources             *CustomResourceSubresources      `json:"subresources,omitempty"`
	AdditionalPrinterColumns []CustomResourceColumnDefinition `json:"additionalPrinterColumns,omitempty"`
	SelectableFields         []SelectableField                `json:"selectableFields,omitempty"`
}

// SelectableField is a field usable in field selectors.
type SelectableField struct {
	JSONPath string `json:"jsonPath"`
}

// CustomResourceColumnDefinition is a column of `kubectl get`.
type CustomResourceColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format,omitempty"`
	Description string `json:"description,omitempty"`
	Priority    int32  `json:"priority,omitempty"`
	JSONPath    string `json:"jsonPath"`
}

// CustomResourceSubresources declares /status and /scale.
type CustomResourceSubresources struct {
	Status *CustomResourceSubresourceStatus `json:"status,omitempty"`
	Scale  *CustomResourceSubresourceScale  `json:"scale,omitempty"`
}

// CustomResourceSubresourceStatus enables /status; it has no fields.
type CustomResourceSubresourceStatus struct{}

// CustomResourceSubresourceScale enables /scale.
type CustomResourceSubresourceScale struct {
	SpecReplicasPath   string  `json:"specReplicasPath"`
	StatusReplicasPath string  `json:"statusReplicasPath"`
	LabelSelectorPath  *string `json:"labelSelectorPath,omitempty"`
}

// CustomResourceValidation holds the version's schema.
type CustomResourceValidation struct {
	OpenAPIV3Schema *JSONSchemaProps `json:"openAPIV3Schema,omitempty"`
}

// CustomResourceDefinitionStatus is what the API server observed.
type CustomResourceDefinitionStatus struct {
	Conditions     []CustomResourceDefinitionCondition `json:"conditions,omitempty"`
	AcceptedNames  CustomResourceDefinitionNames       `json:"acceptedNames"`
	StoredVersions []string                            `json:"storedVersions"`
}

// CustomResourceDefinitionConditionType names a condition.
type CustomResourceDefinitionConditionType string

// The conditions the API server sets.
const (
	Established                           CustomResourceDefinitionConditionType = "Established"
	NamesAccepted                         CustomResourceDefinitionConditionType = "NamesAccepted"
	NonStructuralSchema                   CustomResourceDefinitionConditionType = "NonStructuralSchema"
	Terminating                           CustomResourceDefinitionConditionType = "Terminating"
	KubernetesAPIApprovalPolicyConformant CustomResourceDefinitionConditionType = "KubernetesAPIApprovalPolicyConformant"
)

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// The condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// CustomResourceDefinitionCondition is one condition.
type CustomResourceDefinitionCondition struct {
	Type               CustomResourceDefinitionConditionType `json:"type"`
	Status             ConditionStatus                       `json:"status"`
	LastTransitionTime metav1.Time                           `json:"lastTransitionTime,omitempty"`
	Reason             string                                `json:"reason,omitempty"`
	Message            string                                `json:"message,omitempty"`
}

// CustomResourceCleanupFinalizer holds a deleted definition until its objects are gone.
const CustomResourceCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// JSONSchemaProps is an OpenAPI v3 schema with Kubernetes' extensions, in the JSON shape of
// apiextensions.k8s.io/v1.
type JSONSchemaProps struct {
	ID                   string                     `json:"id,omitempty"`
	Schema               string                     `json:"$schema,omitempty"`
	Ref                  *string                    `json:"$ref,omitempty"`
	Description          string                     `json:"description,omitempty"`
	Type                 string                     `json:"type,omitempty"`
	Format               string                     `json:"format,omitempty"`
	Title                string                     `json:"title,omitempty"`
	Default              *JSON                      `json:"default,omitempty"`
	Maximum              *float64                   `json:"maximum,omitempty"`
	ExclusiveMaximum     bool                       `json:"exclusiveMaximum,omitempty"`
	Minimum              *float64                   `json:"minimum,omitempty"`
	ExclusiveMinimum     bool                       `json:"exclusiveMinimum,omitempty"`
	MaxLength            *int64                     `json:"maxLength,omitempty"`
	MinLength            *int64                     `json:"minLength,omitempty"`
	Pattern              string                     `json:"pattern,omitempty"`
	MaxItems             *int64                     `json:"maxItems,omitempty"`
	MinItems             *int64                     `json:"minItems,omitempty"`
	UniqueItems          bool                       `json:"uniqueItems,omitempty"`
	MultipleOf           *float64                   `json:"multipleOf,omitempty"`
	Enum                 []JSON                     `json:"enum,omitempty"`
	MaxProperties        *int64                     `json:"maxProperties,omitempty"`
	MinProperties        *int64                     `json:"minProperties,omitempty"`
	Required             []string                   `json:"required,omitempty"`
	Items                *JSONSchemaPropsOrArray    `json:"items,omitempty"`
	AllOf                []JSONSchemaProps          `json:"allOf,omitempty"`
	OneOf                []JSONSchemaProps          `json:"oneOf,omitempty"`
	AnyOf                []JSONSchemaProps          `json:"anyOf,omitempty"`
	Not                  *JSONSchemaProps           `json:"not,omitempty"`
	Properties           map[string]JSONSchemaProps `json:"properties,omitempty"`
	AdditionalProperties *JSONSchemaPropsOrBool     `json:"additionalProperties,omitempty"`
	PatternProperties    map[string]JSONSchemaProps `json:"patternProperties,omitempty"`
	Dependencies         map[string]json.RawMessage `json:"dependencies,omitempty"`
	AdditionalItems      *JSONSchemaPropsOrBool     `json:"additionalItems,omitempty"`
	Definitions          map[string]JSONSchemaProps `json:"definitions,omitempty"`
	ExternalDocs         *ExternalDocumentation     `json:"externalDocs,omitempty"`
	Example              *JSON                      `json:"example,omitempty"`
	Nullable             bool                       `json:"nullable,omitempty"`

	XPreserveUnknownFields *bool            `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
	XEmbeddedResource      bool             `json:"x-kubernetes-embedded-resource,omitempty"`
	XIntOrString           bool             `json:"x-kubernetes-int-or-string,omitempty"`
	XListMapKeys           []string         `json:"x-kubernetes-list-map-keys,omitempty"`
	XListType              *string          `json:"x-kubernetes-list-type,omitempty"`
	XMapType               *string          `json:"x-kubernetes-map-type,omitempty"`
	XValidations           []ValidationRule `json:"x-kubernetes-validations,omitempty"`
}

// ValidationRule is a CEL rule (x-kubernetes-validations).
type ValidationRule struct {
	Rule              string  `json:"rule"`
	Message           string  `json:"message,omitempty"`
	MessageExpression string  `json:"messageExpression,omitempty"`
	Reason            *string `json:"reason,omitempty"`
	FieldPath         string  `json:"fieldPath,omitempty"`
	OptionalOldSelf   *bool   `json:"optionalOldSelf,omitempty"`
}

// ExternalDocumentation points to more documentation.
type ExternalDocumentation struct {
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"`
}

// JSON is any JSON value, kept as its raw bytes.
type JSON struct {
	Raw []byte `json:"-"`
}

// MarshalJSON writes the raw value ("null" when empty).
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j.Raw) == 0 {
		return []byte("null"), nil
	}
	return j.Raw, nil
}

// UnmarshalJSON keeps a copy of the value.
func (j *JSON) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		j.Raw = nil
		return nil
	}
	j.Raw = append(j.Raw[:0], data...)
	return nil
}

// JSONSchemaPropsOrArray is a schema or a list of schemas (items).
type JSONSchemaPropsOrArray struct {
	Schema      *JSONSchemaProps
	JSONSchemas []JSONSchemaProps
}

// MarshalJSON writes whichever form is set.
func (s JSONSchemaPropsOrArray) MarshalJSON() ([]byte, error) {
	if len(s.JSONSchemas) > 0 {
		return json.Marshal(s.JSONSchemas)
	}
	return json.Marshal(s.Schema)
}

// UnmarshalJSON reads either form.
func (s *JSONSchemaPropsOrArray) UnmarshalJSON(data []byte) error {
	*s = JSONSchemaPropsOrArray{}
	if len(data) > 0 && data[0] == '[' {
		return json.Unmarshal(data, &s.JSONSchemas)
	}
	if string(data) == "null" {
		return nil
	}
	s.Schema = &JSONSchemaProps{}
	return json.Unmarshal(data, s.Schema)
}

// JSONSchemaPropsOrBool is a schema or a boolean (additionalProperties).
type JSONSchemaPropsOrBool struct {
	Allows bool
	Schema *JSONSchemaProps
}

// MarshalJSON writes the schema when set, else the boolean.
func (s JSONSchemaPropsOrBool) MarshalJSON() ([]byte, error) {
	if s.Schema != nil {
		return json.Marshal(s.Schema)
	}
	return json.Marshal(s.Allows)
}

// UnmarshalJSON reads either form; a schema allows.
func (s *JSONSchemaPropsOrBool) UnmarshalJSON(data []byte) error {
	*s = JSONSchemaPropsOrBool{}
	switch string(data) {
	case "true":
		s.Allows = true
		return nil
	case "false", "null":
		return nil
	}
	s.Allows = true
	s.Schema = &JSONSchemaProps{}
	return json.Unmarshal(data, s.Schema)
}

// OpenAPIModelName is the name Kubernetes publishes the definition's schema under.
func (CustomResourceDefinition) OpenAPIModelName() string {
	return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
}

// OpenAPIModelName is the name Kubernetes publishes the list's schema under.
func (CustomResourceDefinitionList) OpenAPIModelName() string {
	return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionList"
}
