package apiserver

import (
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// maxBodyBytes bounds request bodies as Kubernetes does (3 MiB), so a huge body is a clean 413
// rather than memory pressure.
const maxBodyBytes = 3 * 1024 * 1024

// resourceHandler serves every verb of one resource and its subresources.
type resourceHandler struct {
	s     *Server
	res   *registry.Resource
	store storage.Interface
	// prefix is the etcd key prefix ending in "/".
	prefix string
	// selectable are the field-selector fields the resource supports.
	selectable map[string]bool

	fieldManager *managedfields.FieldManager
	// subresourceFieldManagers record ownership of writes through status and the other
	// subresources that update the whole object (Resource.Subresources), by subresource name.
	subresourceFieldManagers map[string]*managedfields.FieldManager
}

func newResourceHandler(s *Server, res *registry.Resource, store storage.Interface) (*resourceHandler, error) {
	if res.Strategy == nil || res.New == nil || res.NewList == nil {
		return nil, fmt.Errorf("resource %s: Strategy, New and NewList are required", res.GroupResource())
	}
	group := res.GroupVersion.Group
	if res.StorageGroup != "" || res.StorageResource != "" {
		group = res.StorageGroup
	}
	if group == "" {
		group = "core"
	}
	storageResource := res.StorageResource
	if storageResource == "" {
		storageResource = res.Plural
	}
	h := &resourceHandler{
		s: s, res: res, store: store,
		prefix:     "/registry/" + group + "/" + storageResource + "/",
		selectable: map[string]bool{"metadata.name": true},
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
	scheme := h.s.cfg.Scheme
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
	fm, err := managedfields.NewDefaultFieldManager(tc, scheme, scheme, scheme, gvk, gvk.GroupVersion(), "", reset(h.res.Strategy))
	if err != nil {
		return fmt.Errorf("field manager for %s: %w", h.res.GroupResource(), err)
	}
	h.fieldManager = fm
	h.subresourceFieldManagers = map[string]*managedfields.FieldManager{}
	names := []string{"status"}
	for name := range h.res.Subresources {
		names = append(names, name)
	}
	for _, name := range names {
		strategy, _, ok := h.res.SubresourceStrategy(name)
		if !ok {
			continue
		}
		sfm, err := managedfields.NewDefaultFieldManager(tc, scheme, scheme, scheme, gvk, gvk.GroupVersion(), name, reset(strategy))
		if err != nil {
			return fmt.Errorf("%s field manager for %s: %w", name, h.res.GroupResource(), err)
		}
		h.subresourceFieldManagers[name] = sfm
	}
	return nil
}

// partialUpdate returns the strategy and field manager of a subresource that updates the whole
// object through a strategy of its own (status, CSRs' approval, ...); nil for the main resource and
// for subresources with handlers of their own (scale, binding, ...).
func (h *resourceHandler) partialUpdate(subresource string) (registry.StatusStrategy, *managedfields.FieldManager) {
	if subresource == "" {
		return nil, nil
	}
	strategy, _, ok := h.res.SubresourceStrategy(subresource)
	if !ok {
		return nil, nil
	}
	return strategy, h.subresourceFieldManagers[subresource]
}

func (h *resourceHandler) key(namespace, name string) string {
	if h.res.Namespaced {
		return h.prefix + namespace + "/" + name
	}
	return h.prefix + name
}

func (h *resourceHandler) collectionPrefix(namespace string) string {
	if h.res.Namespaced && namespace != "" {
		return h.prefix + namespace + "/"
	}
	return h.prefix
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
	if !h.res.Namespaced && info.Namespace != "" && info.Resource != "namespaces" {
		h.s.writeError(w, r, apierrors.NewNotFound(h.res.GroupResource(), info.Name))
		return
	}
	if h.res.Namespaced && info.Namespace == "" && info.Name != "" {
		h.s.writeError(w, r, apierrors.NewBadRequest("the server could not find the requested resource (namespace is required)"))
		return
	}
	if info.Subresource != "" {
		h.serveSubresource(w, r, info)
		return
	}
	if !h.allowsVerb(info.Verb) {
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(h.res.GroupResource(), info.Verb))
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

func (h *resourceHandler) serveSubresource(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	switch _, verbs, ok := h.res.SubresourceStrategy(info.Subresource); {
	case ok && verbs != nil && !slices.Contains(verbs, info.Verb):
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: h.res.GroupVersion.Group, Resource: h.res.Plural + "/" + info.Subresource}, info.Verb))
	case ok:
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
	case info.Subresource == "scale" && h.res.Scale != nil:
		h.serveScale(w, r, info)
	default:
		if sub := h.s.extraSubresource(h.res.GroupResource(), info.Subresource); sub != nil {
			sub(h, w, r, info)
			return
		}
		h.s.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{Group: h.res.GroupVersion.Group, Resource: h.res.Plural + "/" + info.Subresource}, info.Name))
	}
}
