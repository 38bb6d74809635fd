package apiextensions

import (
	"context"
	"slices"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

// Resources returns the apiextensions.k8s.io/v1 resources.
func Resources() []*registry.Resource {
	apiVersion := crdv1.SchemeGroupVersion.String()
	return []*registry.Resource{{
		GroupVersion: crdv1.SchemeGroupVersion, Kind: "CustomResourceDefinition", ListKind: "CustomResourceDefinitionList",
		Plural: "customresourcedefinitions", Singular: "customresourcedefinition",
		ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"},
		New:     func() runtime.Object { return &crdv1.CustomResourceDefinition{} },
		NewList: func() runtime.Object { return &crdv1.CustomResourceDefinitionList{} },
		Strategy: &strategy{Strategy: vu.Strategy[*crdv1.CustomResourceDefinition]{
			APIVersion: apiVersion,
			NameFn:     func(string, bool) []string { return nil }, // checked against the names below
			ClearStatus: func(c *crdv1.CustomResourceDefinition) {
				c.Status = crdv1.CustomResourceDefinitionStatus{StoredVersions: []string{}}
				// As upstream: the storage version is stored from the first write on.
				for _, v := range c.Spec.Versions {
					if v.Storage {
						c.Status.StoredVersions = append(c.Status.StoredVersions, v.Name)
					}
				}
			},
			KeepStatus: func(c, old *crdv1.CustomResourceDefinition) {
				c.Status = old.Status
				for _, v := range c.Spec.Versions {
					if v.Storage && !slices.Contains(c.Status.StoredVersions, v.Name) {
						c.Status.StoredVersions = append(slices.Clone(c.Status.StoredVersions), v.Name)
					}
				}
			},
			SpecEqual: func(c, old *crdv1.CustomResourceDefinition) bool {
				return apiequality.Semantic.DeepEqual(c.Spec, old.Spec)
			},
			ValidateObject: ValidateCustomResourceDefinition,
			ValidateUpdateObject: func(c, old *crdv1.CustomResourceDefinition) field.ErrorList {
				errs := ValidateCustomResourceDefinitionUpdate(c, old)
				if c.Spec.Group != old.Spec.Group {
					errs = append(errs, field.Invalid(field.NewPath("spec", "group"), c.Spec.Group, "field is immutable"))
				}
				if c.Spec.Names.Plural != old.Spec.Names.Plural && establishedOf(old) {
					errs = append(errs, field.Invalid(field.NewPath("spec", "names", "plural"), c.Spec.Names.Plural, "field is immutable"))
				}
				return errs
			},
		}},
		Status: &vu.StatusStrategy[*crdv1.CustomResourceDefinition]{
			APIVersion: apiVersion,
			Metadata:   vu.StatusResetsMetadata,
			KeepSpec: func(c, old *crdv1.CustomResourceDefinition) {
				c.Spec = old.Spec
			},
			ValidateStatus: func(c, _ *crdv1.CustomResourceDefinition) field.ErrorList {
				return validateStatus(c)
			},
		},
		Printer: &registry.TablePrinter{
			Columns: []metav1.TableColumnDefinition{
				{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
				{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
			},
			Row: func(obj runtime.Object, _ time.Time) ([]interface{}, error) {
				c := obj.(*crdv1.CustomResourceDefinition)
				return []interface{}{c.Name, c.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
			},
		},
	}}
}

func establishedOf(c *crdv1.CustomResourceDefinition) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == crdv1.Established && cond.Status == crdv1.ConditionTrue {
			return true
		}
	}
	return false
}

// strategy adds to the generic one the delete of a definition: as upstream, the first delete adds
// the customresourcecleanup finalizer and the Terminating condition, so that the definition stays
// until its objects are gone.
type strategy struct {
	vu.Strategy[*crdv1.CustomResourceDefinition]
}

var _ registry.DeletionHolder = &strategy{}

// PrepareForDelete marks the definition terminating and holds it with the cleanup finalizer.
func (s *strategy) PrepareForDelete(_ context.Context, obj runtime.Object, now time.Time) bool {
	c, ok := obj.(*crdv1.CustomResourceDefinition)
	if !ok {
		return false
	}
	if c.DeletionTimestamp != nil {
		// Already going away: the finalizer (if still there) holds it.
		return len(c.Finalizers) > 0
	}
	if !slices.Contains(c.Finalizers, crdv1.CustomResourceCleanupFinalizer) {
		c.Finalizers = append(c.Finalizers, crdv1.CustomResourceCleanupFinalizer)
	}
	ts := metav1.NewTime(now)
	c.DeletionTimestamp = &ts
	zero := int64(0)
	c.DeletionGracePeriodSeconds = &zero
	SetCondition(&c.Status, crdv1.CustomResourceDefinitionCondition{
		Type: crdv1.Terminating, Status: crdv1.ConditionTrue, Reason: "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	}, now)
	return true
}

// HoldsDeletion is false: the metadata finalizer alone holds a definition.
func (s *strategy) HoldsDeletion(runtime.Object) bool { return false }

// SetCondition sets or replaces a condition, keeping lastTransitionTime when the status is unchanged.
func SetCondition(status *crdv1.CustomResourceDefinitionStatus, cond crdv1.CustomResourceDefinitionCondition, now time.Time) {
	cond.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	for i, existing := range status.Conditions {
		if existing.Type != cond.Type {
			continue
		}
		if existing.Status == cond.Status {
			cond.LastTransitionTime = existing.LastTransitionTime
		}
		status.Conditions[i] = cond
		return
	}
	status.Conditions = append(status.Conditions, cond)
}

// Condition returns the condition of type t, if any.
func Condition(status *crdv1.CustomResourceDefinitionStatus, t crdv1.CustomResourceDefinitionConditionType) *crdv1.CustomResourceDefinitionCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// RegisterDefaults registers the defaults of a definition: listKind, singular, the conversion
// strategy, as upstream's SetDefaults.
func RegisterDefaults(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&crdv1.CustomResourceDefinition{}, func(obj interface{}) {
		SetDefaults(obj.(*crdv1.CustomResourceDefinition))
	})
	return nil
}

// SetDefaults fills what upstream's defaulting fills.
func SetDefaults(c *crdv1.CustomResourceDefinition) {
	if c.Spec.Names.ListKind == "" && c.Spec.Names.Kind != "" {
		c.Spec.Names.ListKind = c.Spec.Names.Kind + "List"
	}
	if c.Spec.Names.Singular == "" && c.Spec.Names.Kind != "" {
		c.Spec.Names.Singular = toLower(c.Spec.Names.Kind)
	}
	if c.Spec.Conversion == nil {
		c.Spec.Conversion = &crdv1.CustomResourceConversion{Strategy: crdv1.NoneConverter}
	}
	if c.Spec.Conversion.Strategy == crdv1.WebhookConverter && c.Spec.Conversion.Webhook != nil &&
		c.Spec.Conversion.Webhook.ClientConfig != nil && c.Spec.Conversion.Webhook.ClientConfig.Service != nil &&
		c.Spec.Conversion.Webhook.ClientConfig.Service.Port == nil {
		port := int32(443)
		c.Spec.Conversion.Webhook.ClientConfig.Service.Port = &port
	}
	if c.Status.StoredVersions == nil {
		c.Status.StoredVersions = []string{}
	}
}

func toLower(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}
