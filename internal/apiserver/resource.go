package apiserver

import (
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// maxBodyBytes bounds request bodies as Kubernetes does (3 MiB), so a huge body is a clean 413
// rather than memory pressure.
const maxBodyBytes = 3 * 1024 * 1024

// resourceHandler serves every verb of one resource and its subresources over HTTP; the store does
// the rest.
type resourceHandler struct {
	s   *Server
	res *registry.Resource
	st  *store.Store
	// selectable are the field-selector fields the resource supports.
	selectable map[string]bool

	// codecs and strict decode request bodies: the server's, or the resource's own for objects
	// built at run time (registry.Resource.Objects). mediaTypes are the encodings offered.
	codecs     serializer.CodecFactory
	strict     serializer.CodecFactory
	mediaTypes []runtime.SerializerInfo

	fieldManager *managedfields.FieldManager
	// subresourceFieldManagers record managed fields of writes through a subresource ("status").
	subresourceFieldManagers map[string]*managedfields.FieldManager
}

func newResourceHandler(s *Server, res *registry.Resource, storage storage.Interface) (*resourceHandler, error) {
	st, err := store.New(store.Config{
		Resource: res, Storage: storage, Clock: s.clock,
		// Called on every create, so a test may swap the server's suffix after start.
		NameSuffix: func() string { return s.nameSuffix() },
	})
	if err != nil {
		return nil, err
	}
	h := &resourceHandler{
		s: s, res: res, st: st,
		selectable: map[string]bool{"metadata.name": true},
		codecs:     s.codecs, strict: s.strict,
	}
	h.mediaTypes = s.codecs.SupportedMediaTypes()
	if res.Objects != nil {
		h.codecs = serializer.NewCodecFactory(res.Objects.Scheme)
		h.strict = serializer.NewCodecFactory(res.Objects.Scheme, serializer.EnableStrict)
		// Unstructured objects have no protobuf form; clients fall back to JSON, as they do with
		// kube-apiserver's custom resources.
		h.mediaTypes = nil
		for _, info := range h.codecs.SupportedMediaTypes() {
			if info.MediaType != runtime.ContentTypeProtobuf {
				h.mediaTypes = append(h.mediaTypes, info)
			}
		}
	}
	if res.Namespaced {
		h.selectable["metadata.namespace"] = true
	}
	if res.SelectableFields != nil {
		for f := range res.SelectableFields(res.New()) {
			h.selectable[f] = true
		}
	}
	if err := h.initFieldManagers(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *resourceHandler) initFieldManagers() error {
	tc := h.s.typeConverter()
	gvk := h.res.GroupVersionKind()
	var (
		convertor runtime.ObjectConvertor = h.s.cfg.Scheme
		defaulter runtime.ObjectDefaulter = h.s.cfg.Scheme
		creater   runtime.ObjectCreater   = h.s.cfg.Scheme
	)
	if o := h.res.Objects; o != nil {
		convertor, defaulter, creater = o.Convertor, o.Defaulter, o.Creater
		if o.TypeConverter != nil {
			tc = o.TypeConverter
		}
	}
	reset := func(p any) map[fieldpath.APIVersion]fieldpath.Filter {
		rp, ok := p.(registry.ResetFieldsProvider)
		if !ok {
			return nil
		}
		out := map[fieldpath.APIVersion]fieldpath.Filter{}
		for v, set := range rp.GetResetFields() {
			out[v] = fieldpath.NewExcludeSetFilter(set)
		}
		return out
	}
	fm, err := managedfields.NewDefaultFieldManager(tc, convertor, defaulter, creater, gvk, gvk.GroupVersion(), "", reset(h.res.Strategy))
	if err != nil {
		return fmt.Errorf("field manager for %s: %w", h.res.GroupResource(), err)
	}
	h.fieldManager = fm
	h.subresourceFieldManagers = map[string]*managedfields.FieldManager{}
	names := make([]string, 0, len(h.res.Subresources)+1)
	names = append(names, "status")
	for name := range h.res.Subresources {
		names = append(names, name)
	}
	for _, name := range names {
		strategy, _, ok := h.res.SubresourceStrategy(name)
		if !ok {
			continue
		}
		sfm, err := managedfields.NewDefaultFieldManager(tc, convertor, defaulter, creater, gvk, gvk.GroupVersion(), name, reset(strategy))
		if err != nil {
			return fmt.Errorf("%s field manager for %s: %w", name, h.res.GroupResource(), err)
		}
		h.subresourceFieldManagers[name] = sfm
	}
	return nil
}

// fieldManagerFor is the field manager of writes through subresource ("" the main resource).
func (h *resourceHandler) fieldManagerFor(subresource string) *managedfields.FieldManager {
	if subresource == "" {
		return h.fieldManager
	}
	return h.subresourceFieldManagers[subresource]
}

func (h *resourceHandler) allowsVerb(verb string) bool {
	if h.res.Verbs == nil {
		return true
	}
	for _, v := range h.res.Verbs {
		if v == verb {
			return true
		}
	}
	return false
}

func (h *resourceHandler) serve(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	// A path whose scope is not the resource's has no route in Kubernetes: a namespace on a
	// cluster-scoped resource, or a named object of a namespaced one without its namespace (only
	// lists and watches span namespaces). Clients test such a path for NotFound.
	if !h.res.Namespaced && info.Namespace != "" && info.Resource != "namespaces" {
		h.s.writeNoRoute(w, r)
		return
	}
	if h.res.Namespaced && info.Namespace == "" && info.Name != "" {
		h.s.writeNoRoute(w, r)
		return
	}
	switch info.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		w, r = withAdmissionWarnings(w, r)
	}
	if info.Subresource != "" {
		h.serveSubresource(w, r, info)
		return
	}
	if h.res.GroupResource() == (schema.GroupResource{Resource: "bindings"}) {
		// Not stored: a Binding posted here is a write to the pod it names.
		serveBindings(h, w, r, info)
		return
	}
	if !h.allowsVerb(info.Verb) || !routed(info) {
		h.s.writeError(w, r, methodNotAllowed())
		return
	}
	if h.res.Compute != nil {
		h.compute(w, r, info)
		return
	}
	switch info.Verb {
	case "get":
		h.get(w, r, info)
	case "list":
		h.list(w, r, info)
	case "watch":
		h.watch(w, r, info)
	case "create":
		h.create(w, r, info)
	case "update":
		h.update(w, r, info, "")
	case "patch":
		h.patch(w, r, info, "")
	case "delete":
		h.delete(w, r, info)
	case "deletecollection":
		h.deleteCollection(w, r, info)
	default:
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(h.res.GroupResource(), info.Verb))
	}
}

// routed reports whether kube-apiserver has a route for the request's method on its path: POST
// goes to collections, PUT and PATCH to named objects. Its other paths answer 405.
func routed(info *RequestInfo) bool {
	switch info.Verb {
	case "create":
		return info.Name == ""
	case "update", "patch":
		return info.Name != ""
	}
	return true
}

// methodNotAllowed is kube-apiserver's answer to a method it serves no route for (a verb the
// resource does not support, POST to a named object, PUT to a collection).
func methodNotAllowed() error {
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "405: Method Not Allowed", 0, false)
}

func (h *resourceHandler) serveSubresource(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	if _, verbs, ok := h.res.SubresourceStrategy(info.Subresource); ok {
		// A view of the whole object written through its own strategy (status, finalize, ...).
		if verbs == nil {
			verbs = []string{"get", "update", "patch"}
		}
		if !slices.Contains(verbs, info.Verb) {
			h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: h.res.GroupVersion.Group, Resource: h.res.Plural + "/" + info.Subresource}, info.Verb))
			return
		}
		switch info.Verb {
		case "get":
			h.get(w, r, info)
		case "update":
			h.update(w, r, info, info.Subresource)
		case "patch":
			h.patch(w, r, info, info.Subresource)
		default:
			h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: h.res.GroupVersion.Group, Resource: h.res.Plural + "/" + info.Subresource}, info.Verb))
		}
		return
	}
	if action := h.res.Actions[info.Subresource]; action != nil {
		h.serveAction(w, r, info, action)
		return
	}
	if info.Subresource == "scale" && h.res.Scale != nil {
		h.serveScale(w, r, info)
		return
	}
	if sub := h.s.extraSubresource(h.res.GroupResource(), info.Subresource); sub != nil {
		sub(h, w, r, info)
		return
	}
	h.s.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{Group: h.res.GroupVersion.Group, Resource: h.res.Plural + "/" + info.Subresource}, info.Name))
}
