package customresource

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	"github.com/skiff-sh/skiff/internal/registry"
)

// Options tune the built resources.
type Options struct {
	// TypeConverter gives server-side apply the schema of the built resource; nil (or an error)
	// deduces the structure from the objects.
	TypeConverter func(res *registry.Resource) (managedfields.TypeConverter, error)
	// Convert converts objects to another version of the definition (its conversion webhook); nil
	// is the None strategy: only apiVersion changes.
	Convert Converter
}

// Converter converts objects of a definition to version to, keeping their order.
type Converter func(objs []*unstructured.Unstructured, to schema.GroupVersion) ([]*unstructured.Unstructured, error)

// Resources builds the resources of crd's served versions.
func Resources(crd *crdv1.CustomResourceDefinition, opts Options) ([]*registry.Resource, error) {
	var storageVersion string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storageVersion = v.Name
		}
	}
	if storageVersion == "" {
		return nil, fmt.Errorf("customresourcedefinition %s: no storage version", crd.Name)
	}
	var out []*registry.Resource
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served {
			continue
		}
		res, err := buildVersion(crd, v, storageVersion, opts)
		if err != nil {
			return nil, fmt.Errorf("customresourcedefinition %s version %s: %w", crd.Name, v.Name, err)
		}
		out = append(out, res)
	}
	return out, nil
}

func buildVersion(crd *crdv1.CustomResourceDefinition, v *crdv1.CustomResourceDefinitionVersion, storageVersion string, opts Options) (*registry.Resource, error) {
	names := crd.Spec.Names
	gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
	storageGV := schema.GroupVersion{Group: crd.Spec.Group, Version: storageVersion}
	listKind := names.ListKind
	if listKind == "" {
		listKind = names.Kind + "List"
	}
	var props *crdv1.JSONSchemaProps
	if v.Schema != nil {
		props = v.Schema.OpenAPIV3Schema
	}
	sch, err := NewSchema(props)
	if err != nil {
		return nil, err
	}
	namespaced := crd.Spec.Scope == crdv1.NamespaceScoped
	hasStatus := v.Subresources != nil && v.Subresources.Status != nil

	// New objects know their kind: the field manager records managed fields against New() as the
	// live object of a create.
	newObj := func() runtime.Object {
		u := &unstructured.Unstructured{Object: map[string]interface{}{}}
		u.SetGroupVersionKind(gv.WithKind(names.Kind))
		return u
	}
	newList := func() runtime.Object {
		l := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
		l.SetGroupVersionKind(gv.WithKind(listKind))
		return l
	}

	// The scheme decodes request bodies: the objects are unstructured under every version of the
	// definition, and its defaulting function prunes and defaults them, so decoding a request,
	// a patch result and a stored object all go through it.
	scheme := runtime.NewScheme()
	for _, ver := range crd.Spec.Versions {
		vgv := schema.GroupVersion{Group: crd.Spec.Group, Version: ver.Name}
		scheme.AddKnownTypeWithName(vgv.WithKind(names.Kind), &unstructured.Unstructured{})
		scheme.AddKnownTypeWithName(vgv.WithKind(listKind), &unstructured.UnstructuredList{})
		metav1.AddToGroupVersion(scheme, vgv)
	}
	defaulter := objectDefaulter{schema: sch}
	scheme.AddTypeDefaultingFunc(&unstructured.Unstructured{}, func(obj interface{}) { defaulter.Default(obj.(runtime.Object)) })

	// Stored objects are decoded as they are, in the storage version, then converted to the served
	// version, then pruned and defaulted with the served version's schema (storageCodec.Decode).
	storageScheme := runtime.NewScheme()
	for _, ver := range crd.Spec.Versions {
		vgv := schema.GroupVersion{Group: crd.Spec.Group, Version: ver.Name}
		storageScheme.AddKnownTypeWithName(vgv.WithKind(names.Kind), &unstructured.Unstructured{})
		storageScheme.AddKnownTypeWithName(vgv.WithKind(listKind), &unstructured.UnstructuredList{})
	}
	jsonSerializer := json.NewSerializerWithOptions(json.DefaultMetaFactory, storageScheme, storageScheme, json.SerializerOptions{})
	inner := versioning.NewCodec(jsonSerializer, jsonSerializer, runtime.UnsafeObjectConvertor(storageScheme), storageScheme, storageScheme, nil,
		storageGV, storageGV, storageScheme.Name())

	res := &registry.Resource{
		GroupVersion: gv, Kind: names.Kind, ListKind: listKind,
		Plural: names.Plural, Singular: names.Singular, ShortNames: names.ShortNames, Categories: names.Categories,
		Namespaced: namespaced,
		// Every served version names the storage version's hash: the objects are stored alike.
		StorageVersionHash: registry.StorageVersionHash(crd.Spec.Group, storageVersion, names.Kind),
		New:                newObj, NewList: newList,
		Strategy: &strategy{gvk: gv.WithKind(names.Kind), plural: names.Plural, namespaced: namespaced, hasStatus: hasStatus, schema: sch},
		Printer:  printer(v.AdditionalPrinterColumns),
		Objects: &registry.ObjectHandling{
			Scheme: scheme, Convertor: convertor{}, Creater: creater{}, Defaulter: defaulter,
			UnknownFields: func(obj map[string]interface{}) []string {
				return sch.Prune(runtime.DeepCopyJSON(obj))
			},
			StorageCodec: storageCodec{inner: inner, served: gv, stored: storageGV, convert: opts.Convert, defaulter: defaulter},
		},
	}
	res.Objects.OpenAPISchema = sch.openAPI
	// Without the schema server-side apply deduces the structure from the objects.
	res.Objects.TypeConverter = managedfields.NewDeducedTypeConverter()
	if opts.TypeConverter != nil {
		tc, err := opts.TypeConverter(res)
		if err != nil {
			return nil, fmt.Errorf("server-side apply schema: %w", err)
		}
		res.Objects.TypeConverter = tc
	}
	if hasStatus {
		res.Status = &statusStrategy{strategy: res.Strategy.(*strategy)}
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		res.Scale = scaleAccessor(v.Subresources.Scale)
	}
	if len(v.SelectableFields) > 0 {
		paths := make([]string, 0, len(v.SelectableFields))
		for _, f := range v.SelectableFields {
			paths = append(paths, f.JSONPath)
		}
		res.SelectableFields = selectableFields(paths)
	}
	return res, nil
}

// objectDefaulter prunes unknown fields and sets the schema's defaults, in that order, as
// kube-apiserver does when it decodes a custom resource.
type objectDefaulter struct{ schema *Schema }

func (d objectDefaulter) Default(obj runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.Object == nil {
		return
	}
	d.schema.Prune(u.Object)
	d.schema.Default(u.Object)
}

// storageCodec keeps objects in etcd under the storage version and serves them under the version
// asked for: with the None conversion strategy converting is rewriting apiVersion, with Webhook the
// definition's webhook converts.
type storageCodec struct {
	inner          runtime.Codec
	served, stored schema.GroupVersion
	convert        Converter
	defaulter      objectDefaulter
}

func (c storageCodec) Encode(obj runtime.Object, w io.Writer) error {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		converted, err := c.to(u, c.stored)
		if err != nil {
			return err
		}
		obj = converted
	}
	return c.inner.Encode(obj, w)
}

// to returns a copy of u in version gv.
func (c storageCodec) to(u *unstructured.Unstructured, gv schema.GroupVersion) (*unstructured.Unstructured, error) {
	if u.GetAPIVersion() == gv.String() {
		return u.DeepCopy(), nil
	}
	if c.convert == nil || u.GetAPIVersion() == "" {
		out := u.DeepCopy()
		out.SetAPIVersion(gv.String())
		return out, nil
	}
	converted, err := c.convert([]*unstructured.Unstructured{u.DeepCopy()}, gv)
	if err != nil {
		return nil, err
	}
	if len(converted) != 1 || converted[0].GetAPIVersion() != gv.String() {
		return nil, fmt.Errorf("conversion to %s returned %d objects of another version", gv, len(converted))
	}
	return converted[0], nil
}

func (c storageCodec) Identifier() runtime.Identifier {
	return runtime.Identifier("customresource-" + c.stored.String() + "-" + c.served.String())
}

func (c storageCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := c.inner.Decode(data, defaults, into)
	if err != nil {
		return nil, gvk, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		converted, err := c.to(u, c.served)
		if err != nil {
			return nil, gvk, err
		}
		u.Object = converted.Object
		c.defaulter.Default(u)
	}
	if gvk != nil {
		// The caller may stamp the returned kind on the object: it is the served version's.
		served := c.served.WithKind(gvk.Kind)
		gvk = &served
	}
	return obj, gvk, nil
}

// convertor converts between versions of the definition the None way: same content, new apiVersion.
type convertor struct{}

func (convertor) Convert(in, out, _ interface{}) error {
	src, ok1 := in.(runtime.Unstructured)
	dst, ok2 := out.(runtime.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("convert %T to %T: only unstructured objects", in, out)
	}
	dst.SetUnstructuredContent(runtime.DeepCopyJSON(src.UnstructuredContent()))
	return nil
}

func (convertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	out := in.DeepCopyObject()
	gvk := in.GetObjectKind().GroupVersionKind()
	if to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk}); ok {
		out.GetObjectKind().SetGroupVersionKind(to)
	}
	return out, nil
}

func (convertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// creater makes empty unstructured objects that know their kind.
type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// strategy is a custom resource's create and update semantics, as kube-apiserver's.
type strategy struct {
	gvk        schema.GroupVersionKind
	plural     string
	namespaced bool
	hasStatus  bool
	schema     *Schema
	// terminating is set once the definition is being deleted: no more objects are created.
	terminating atomic.Bool
}

var (
	_ registry.Strategy            = &strategy{}
	_ registry.ResetFieldsProvider = &strategy{}
	_ registry.BeginCreater        = &strategy{}
)

// SetTerminating refuses creates from now on: the definition is being deleted with its objects.
func (s *strategy) SetTerminating() { s.terminating.Store(true) }

// BeginCreate refuses a create while the definition is terminating, in kube-apiserver's words.
func (s *strategy) BeginCreate(context.Context, runtime.Object, *metav1.CreateOptions) (registry.FinishFunc, error) {
	if s.terminating.Load() {
		err := apierrors.NewMethodNotSupported(schema.GroupResource{Group: s.gvk.Group, Resource: s.plural}, "create")
		err.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
		return nil, err
	}
	return nil, nil
}

func (s *strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	u := obj.(*unstructured.Unstructured)
	if s.hasStatus {
		delete(u.Object, "status")
	}
	u.SetGeneration(1)
}

func (s *strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	u, prev := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	if s.hasStatus {
		if st, ok := prev.Object["status"]; ok {
			u.Object["status"] = st
		} else {
			delete(u.Object, "status")
		}
	}
	// The generation counts changes of everything but metadata (and status, when it has its own
	// subresource), as kube-apiserver counts them for custom resources.
	u.SetGeneration(prev.GetGeneration())
	if !apiequality.Semantic.DeepEqual(withoutMetadata(u.Object, s.hasStatus), withoutMetadata(prev.Object, s.hasStatus)) {
		u.SetGeneration(prev.GetGeneration() + 1)
	}
}

func withoutMetadata(obj map[string]interface{}, dropStatus bool) map[string]interface{} {
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		if k == "metadata" || (dropStatus && k == "status") {
			continue
		}
		out[k] = v
	}
	return out
}

func (s *strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	u := obj.(*unstructured.Unstructured)
	errs := apivalidation.ValidateObjectMetaAccessor(u, s.namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, s.validateContent(u, nil)...)
}

func (s *strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	u, prev := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(u, prev, field.NewPath("metadata"))
	return append(errs, s.validateContent(u, prev)...)
}

func (s *strategy) validateContent(u, old *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if u.GetAPIVersion() != s.gvk.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), "must be "+s.gvk.GroupVersion().String()))
	}
	if u.GetKind() != s.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), "must be "+s.gvk.Kind))
	}
	schemaErrs := s.schema.Validate(u.Object)
	if old != nil {
		// Ratcheting: an update may keep what a changed schema now refuses, if it leaves it as is.
		schemaErrs = s.schema.Ratchet(schemaErrs, u.Object, old.Object)
	}
	errs = append(errs, schemaErrs...)
	if len(errs) > 0 {
		// Rules are written for objects of the schema's shape; kube-apiserver evaluates them only
		// on objects that passed the schema.
		return errs
	}
	var oldObj map[string]interface{}
	if old != nil {
		oldObj = old.Object
	}
	return s.schema.ValidateRules(u.Object, oldObj)
}

func (s *strategy) AllowCreateOnUpdate() bool      { return false }
func (s *strategy) AllowUnconditionalUpdate() bool { return false }

func (s *strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	if !s.hasStatus {
		return nil
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(s.gvk.GroupVersion().String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

// statusStrategy is /status: only the status changes.
type statusStrategy struct{ strategy *strategy }

var (
	_ registry.StatusStrategy      = &statusStrategy{}
	_ registry.ResetFieldsProvider = &statusStrategy{}
)

func (s *statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	u, prev := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	status, hasStatus := u.Object["status"]
	next := prev.DeepCopy()
	// Metadata as the stored object has it, except what /status may change (as ResetObjectMetaForStatus).
	next.SetResourceVersion(u.GetResourceVersion())
	next.SetManagedFields(u.GetManagedFields())
	if hasStatus {
		next.Object["status"] = status
	} else {
		delete(next.Object, "status")
	}
	u.Object = next.Object
}

func (s *statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return s.strategy.ValidateUpdate(ctx, obj, old)
}

func (s *statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(s.strategy.gvk.GroupVersion().String()): fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata")),
	}
}

// fieldsAt splits a simple JSON path (".spec.replicas") into its fields.
func fieldsAt(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}

func scaleAccessor(sc *crdv1.CustomResourceSubresourceScale) *registry.ScaleAccessor {
	return &registry.ScaleAccessor{
		Get: func(obj runtime.Object) (*autoscalingv1.Scale, error) {
			u := obj.(*unstructured.Unstructured)
			// The Scale carries the object's identity as built-in resources' do: clients (the HPA
			// controller's scale client) PUT it back by its name.
			scale := &autoscalingv1.Scale{
				TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
				ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
					ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp()},
			}
			if n, found, err := unstructured.NestedInt64(u.Object, fieldsAt(sc.SpecReplicasPath)...); err == nil && found {
				scale.Spec.Replicas = int32(n)
			}
			if n, found, err := unstructured.NestedInt64(u.Object, fieldsAt(sc.StatusReplicasPath)...); err == nil && found {
				scale.Status.Replicas = int32(n)
			}
			if sc.LabelSelectorPath != nil && *sc.LabelSelectorPath != "" {
				if sel, found, err := unstructured.NestedString(u.Object, fieldsAt(*sc.LabelSelectorPath)...); err == nil && found {
					scale.Status.Selector = sel
				}
			}
			return scale, nil
		},
		SetReplicas: func(obj runtime.Object, replicas int32) error {
			u := obj.(*unstructured.Unstructured)
			return unstructured.SetNestedField(u.Object, int64(replicas), fieldsAt(sc.SpecReplicasPath)...)
		},
	}
}

func selectableFields(paths []string) func(obj runtime.Object) fields.Set {
	return func(obj runtime.Object) fields.Set {
		set := fields.Set{}
		u, ok := obj.(*unstructured.Unstructured)
		for _, p := range paths {
			name := strings.TrimPrefix(p, ".")
			set[name] = ""
			if !ok {
				continue
			}
			if v, found, err := unstructured.NestedFieldNoCopy(u.Object, fieldsAt(p)...); err == nil && found && v != nil {
				set[name] = fmt.Sprint(v)
			}
		}
		return set
	}
}

// printer gives kubectl get the definition's additionalPrinterColumns after the name, or the age
// when it declares none, as kube-apiserver does.
func printer(cols []crdv1.CustomResourceColumnDefinition) *registry.TablePrinter {
	objectMeta := metav1.ObjectMeta{}.SwaggerDoc()
	defs := []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: objectMeta["name"]}}
	if len(cols) == 0 {
		cols = []crdv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: objectMeta["creationTimestamp"]}}
	}
	parsers := make([]*jsonpath.JSONPath, len(cols))
	for i, c := range cols {
		defs = append(defs, metav1.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: c.Priority})
		jp := jsonpath.New(c.Name)
		jp.AllowMissingKeys(true)
		if err := jp.Parse("{" + c.JSONPath + "}"); err == nil {
			parsers[i] = jp
		}
	}
	return &registry.TablePrinter{
		Columns: defs,
		Row: func(obj runtime.Object, now time.Time) ([]interface{}, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, fmt.Errorf("print %T: not unstructured", obj)
			}
			cells := []interface{}{u.GetName()}
			for i, c := range cols {
				cells = append(cells, cell(parsers[i], c, u.Object, now))
			}
			return cells, nil
		},
	}
}

func cell(jp *jsonpath.JSONPath, c crdv1.CustomResourceColumnDefinition, obj map[string]interface{}, now time.Time) interface{} {
	if jp == nil {
		return nil
	}
	results, err := jp.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	v := results[0][0].Interface()
	switch c.Type {
	case "date":
		s, ok := v.(string)
		if !ok {
			return nil
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil
		}
		return duration.HumanDuration(now.Sub(t))
	case "integer":
		switch n := v.(type) {
		case int64:
			return n
		case float64:
			return int64(n)
		}
		return nil
	case "number":
		switch n := v.(type) {
		case int64:
			return float64(n)
		case float64:
			return n
		}
		return nil
	case "boolean":
		if b, ok := v.(bool); ok {
			return b
		}
		return nil
	case "string":
		if s, ok := v.(string); ok {
			return s
		}
		return fmt.Sprint(v)
	}
	return v
}
