package registry

import (
	"context"
	"time"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
	"github.com/skiff-sh/skiff/internal/request"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Resource describes one served resource: everything the generic REST handlers, discovery, OpenAPI and
// storage need. Built-in resources are declared by the group packages under internal/registry; later,
// CustomResourceDefinitions produce Resources at run time, so nothing here may assume a compiled-in type.
type Resource struct {
	GroupVersion schema.GroupVersion
	Kind         string // "Pod"
	ListKind     string // "PodList"
	Plural       string // "pods" (the URL segment)
	Singular     string // "pod"
	ShortNames   []string
	Categories   []string // e.g. "all"
	Namespaced   bool

	// New and NewList return empty objects of the served type.
	New     func() runtime.Object
	NewList func() runtime.Object

	// StorageResource names the etcd key segment when two served resources share one storage
	// (events.k8s.io/v1 events are stored with core/v1 events). Empty means Plural. Keys are
	// /registry/<group or "core">/<StorageResource>/<namespace>/<name>.
	StorageResource string
	StorageGroup    string // group segment of the key when it differs from GroupVersion.Group

	// StorageVersionHash is discovery's storageVersionHash: an opaque token that changes when the
	// version objects are stored under changes (StorageVersionHash gives kube-apiserver's). Clients
	// such as the storage version migrator compare it; empty leaves it out of discovery.
	StorageVersionHash string

	// Strategy holds the type's create/update semantics. Required.
	Strategy Strategy

	// Status, when set, serves the /status subresource with these semantics.
	Status StatusStrategy

	// Subresources serves further subresources that update the whole object through a strategy of
	// their own (namespaces/finalize; later certificatesigningrequests/approval, pods/resize), with
	// no handler code of their own. "status" may be given here instead of in Status.
	Subresources map[string]*Subresource

	// Actions serves subresources that are requests acting on the object (pods/binding,
	// pods/eviction, serviceaccounts/token): create only, with a body of their own kind.
	Actions map[string]*Action

	// Scale, when set, serves the /scale subresource (autoscaling/v1 Scale).
	Scale *ScaleAccessor

	// Printer gives the columns of `kubectl get`; nil falls back to NAME and AGE (CREATED AT).
	Printer *TablePrinter

	// SelectableFields returns the type-specific field-selector fields of obj (for example
	// "spec.nodeName" for pods). metadata.name and metadata.namespace are always selectable and
	// need not be returned. nil means only the metadata fields.
	SelectableFields func(obj runtime.Object) fields.Set

	// Compute, when set, makes the resource create-only and stored nowhere (the review APIs): a
	// POST decodes the object, Compute fills in its answer (status) and the result is returned with
	// 201, as Kubernetes serves SubjectAccessReview or TokenReview. Verbs should be ["create"].
	Compute ComputeFunc

	// Verbs lists the verbs served; nil means all of get, list, watch, create, update, patch, delete,
	// deletecollection.
	Verbs []string

	// Objects, when set, replaces the server's scheme for the resource's objects: decoding and
	// defaulting requests, conversion, the schema server-side apply works on and the storage codec.
	// Resources built at run time from a CustomResourceDefinition set it: their objects are
	// unstructured and the server's scheme knows nothing of them.
	Objects *ObjectHandling
}

// ObjectHandling is how the objects of a resource built at run time are decoded, defaulted,
// converted and stored.
type ObjectHandling struct {
	// Scheme decodes request bodies; its defaulting function for the objects runs on every decode.
	Scheme        *runtime.Scheme
	Convertor     runtime.ObjectConvertor
	Creater       runtime.ObjectCreater
	Defaulter     runtime.ObjectDefaulter
	TypeConverter managedfields.TypeConverter
	// UnknownFields lists the fields of a decoded request body the schema does not declare (they
	// are pruned), for fieldValidation Strict (an error) and Warn (warnings).
	UnknownFields func(obj map[string]interface{}) []string
	// StorageCodec encodes and decodes the objects in etcd.
	StorageCodec runtime.Codec
	// OpenAPISchema is the objects' schema for the OpenAPI documents (kubectl explain, client-side
	// validation); nil publishes them as objects that keep any field.
	OpenAPISchema *spec.Schema
	// StrategicMergePatch is false for objects without Go types, which cannot be strategic-merge
	// patched (415, as kube-apiserver answers for custom resources).
	StrategicMergePatch bool
}

// ComputeFunc answers a create of a computed resource from what only the API server holds.
type ComputeFunc func(ctx context.Context, env ComputeEnv, obj runtime.Object) (runtime.Object, error)

// ComputeEnv is what the API server lends computed resources: its authorizer, the rules behind it
// and its token authentication. Any of them may be nil when the server was built without it.
type ComputeEnv struct {
	Authorizer request.Authorizer
	Rules      request.RuleLister
	Tokens     request.TokenAuthenticator
	// SchedulingExplainer evaluates a pod with the scheduler's plugins against the server's own
	// view of nodes and pods (PodSchedulingExplanation); nil when the server runs no explainer.
	SchedulingExplainer SchedulingExplainer
}

// SchedulingExplainer computes a PodSchedulingExplanation's status for the pod namespace/name
// against nodeNames (every node when empty). A missing pod or node is a NotFound API error; an
// explainer whose caches are not synced yet answers ServiceUnavailable.
type SchedulingExplainer interface {
	Explain(ctx context.Context, namespace, name string, nodeNames []string) (explainv1.PodSchedulingExplanationStatus, error)
}

// GroupResource of the resource.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Plural}
}

// GroupVersionKind of the served type.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// GroupVersionResource of the resource.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Plural)
}

// Strategy is a type's create and update semantics, as Kubernetes' RESTCreateStrategy and
// RESTUpdateStrategy define them. Defaulting is not here: it is registered on the scheme
// (scheme.AddTypeDefaultingFunc) so that decoding, patching and server-side apply all apply it.
type Strategy interface {
	// PrepareForCreate clears what a client may not set on create (status where a status subresource
	// exists) and sets generation to 1 where the type tracks it.
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	// PrepareForUpdate carries over what a main-resource update may not change (status where a status
	// subresource exists) and bumps metadata.generation when the spec changed.
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	// Validate checks a new object completely, metadata included (with
	// k8s.io/apimachinery/pkg/api/validation.ValidateObjectMeta and the type's name rule).
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an update completely: the new object's validity and immutable fields.
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	// AllowCreateOnUpdate is true where PUT to a missing name creates it.
	AllowCreateOnUpdate() bool
	// AllowUnconditionalUpdate is true where PUT without a resourceVersion is accepted.
	AllowUnconditionalUpdate() bool
}

// StatusStrategy is the /status subresource's update semantics: typically the spec and most
// metadata are reset to the stored object's (metav1.ResetObjectMetaForStatus) and only status changes.
type StatusStrategy interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// GracefulDeleter is implemented by strategies whose objects are deleted in two steps (pods): the
// first delete sets deletionTimestamp and deletionGracePeriodSeconds, the kubelet finishes it.
// CheckGracefulDelete may change options.GracePeriodSeconds and returns true when the delete must be
// graceful (a non-zero grace period). A false result deletes at once.
type GracefulDeleter interface {
	CheckGracefulDelete(ctx context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool
}

// ResetFieldsProvider is implemented by strategies whose main resource or subresource ignores some
// fields (status on the main resource, spec on /status); server-side apply must not record ownership
// of fields a request cannot change.
type ResetFieldsProvider interface {
	GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set
}

// Warner is implemented by strategies that return warnings (the Warning header) on create or update.
type Warner interface {
	WarningsOnCreate(ctx context.Context, obj runtime.Object) []string
	WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string
}

// ScaleAccessor reads and writes the replica count behind a /scale subresource.
type ScaleAccessor struct {
	// Get fills the Scale's spec.replicas, status.replicas and status.selector from obj.
	Get func(obj runtime.Object) (*autoscalingv1.Scale, error)
	// SetReplicas writes spec.replicas of obj.
	SetReplicas func(obj runtime.Object, replicas int32) error
}

// TablePrinter gives server-side printing for `kubectl get`: column definitions (with priority 0 for
// the default view and 1 for -o wide) and one row of cells per object, in column order.
type TablePrinter struct {
	Columns []metav1.TableColumnDefinition
	// Row returns the cells of obj; the first cell is the name. now is the server's clock, for ages.
	Row func(obj runtime.Object, now time.Time) ([]interface{}, error)
}
