package apiserver

import (
	"context"
	"fmt"
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/storage"
)

// subresourceFunc serves a subresource that is neither status nor scale.
type subresourceFunc func(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo)

// extraSubresource returns the handler of the built-in special subresources.
func (s *Server) extraSubresource(gr schema.GroupResource, name string) subresourceFunc {
	if gr.Group != "" {
		return nil
	}
	switch gr.Resource + "/" + name {
	case "pods/log", "pods/exec", "pods/attach", "pods/portforward":
		return servePodConnect
	case "pods/proxy":
		return withConnectAdmission(servePodProxy)
	case "services/proxy":
		return withConnectAdmission(serveServiceProxy)
	case "nodes/proxy":
		return withConnectAdmission(serveNodeProxy)
	}
	if s.cfg.ExtraSubresources != nil {
		if f := s.cfg.ExtraSubresources(gr, name); f != nil {
			return func(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) { f(w, r, info) }
		}
	}
	return nil
}

func (s *Server) typeConverter() managedfields.TypeConverter {
	if s.cfg.TypeConverter != nil {
		return s.cfg.TypeConverter
	}
	return managedfields.NewDeducedTypeConverter()
}

// ---- scale ----

func (h *resourceHandler) serveScale(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	scaleGV := autoscalingv1.SchemeGroupVersion
	writeScale := func(code int, obj runtime.Object) {
		scale, err := h.res.Scale.Get(obj)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		choice, err := negotiateOutput(acceptsHeader(r), h.s.codecs.SupportedMediaTypes(), false)
		if err != nil {
			h.s.writeError(w, r, notAcceptable(err))
			return
		}
		if err := h.s.writeEncoded(w, code, choice, scaleGV, scale); err != nil {
			h.s.log.Debug("write scale", "err", err)
		}
	}
	switch info.Verb {
	case "get":
		obj, err := h.st.Get(r.Context(), info.Namespace, info.Name, storage.GetOptions{})
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		writeScale(http.StatusOK, obj)
	case "update", "patch":
		opts, body, ok := h.readWrite(w, r)
		if !ok {
			return
		}
		// A scale writes the main resource: its strategy, admission and managed fields.
		out, _, err := h.st.Update(r.Context(), info.Namespace, info.Name, func(_ context.Context, current runtime.Object) (runtime.Object, error) {
			if current == nil {
				return nil, apierrors.NewNotFound(h.res.GroupResource(), info.Name)
			}
			scale, err := h.res.Scale.Get(current)
			if err != nil {
				return nil, err
			}
			next, err := h.nextScale(r, info.Verb, scale, body)
			if err != nil {
				return nil, err
			}
			if next.Spec.Replicas < 0 {
				return nil, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, info.Name,
					field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), next.Spec.Replicas, "must be greater than or equal to 0")})
			}
			obj := current.DeepCopyObject()
			if err := h.res.Scale.SetReplicas(obj, next.Spec.Replicas); err != nil {
				return nil, err
			}
			// The Scale's resourceVersion, when given, is the precondition; none updates the
			// object as it is now.
			if next.ResourceVersion != "" {
				m, err := meta.Accessor(obj)
				if err != nil {
					return nil, err
				}
				m.SetResourceVersion(next.ResourceVersion)
			}
			return obj, nil
		}, h.updateOptions(&updateContext{opts: opts}))
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		writeScale(http.StatusOK, out)
	default:
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: h.res.GroupVersion.Group, Resource: h.res.Plural + "/scale"}, info.Verb))
	}
}

// nextScale reads the Scale a PUT sends or computes the one a PATCH describes.
func (h *resourceHandler) nextScale(r *http.Request, verb string, current *autoscalingv1.Scale, body []byte) (*autoscalingv1.Scale, error) {
	scaleGV := autoscalingv1.SchemeGroupVersion
	if verb == "update" {
		info, ok := inputSerializer(r.Header.Get("Content-Type"), h.s.codecs.SupportedMediaTypes())
		if !ok {
			return nil, unsupportedMediaType(r.Header.Get("Content-Type"))
		}
		next := &autoscalingv1.Scale{}
		gvk := scaleGV.WithKind("Scale")
		if _, _, err := h.s.codecs.DecoderToVersion(info.Serializer, scaleGV).Decode(body, &gvk, next); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("Scale in version %q cannot be handled as a Scale: %v", scaleGV.Version, err))
		}
		return next, nil
	}
	pt, ok := patchTypeOf(r.Header.Get("Content-Type"))
	if !ok || pt == types.ApplyYAMLPatchType {
		return nil, unsupportedMediaType(r.Header.Get("Content-Type"))
	}
	currentJSON, err := runtime.Encode(h.s.codecs.LegacyCodec(scaleGV), current)
	if err != nil {
		return nil, err
	}
	patched, err := applyPatch(pt, currentJSON, body, &autoscalingv1.Scale{})
	if err != nil {
		return nil, err
	}
	next := &autoscalingv1.Scale{}
	if err := runtime.DecodeInto(h.s.codecs.UniversalDecoder(scaleGV), patched, next); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return next, nil
}

// ---- Lookup for admission ----

func (s *Server) handlerForGroupResource(gr schema.GroupResource) *resourceHandler {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for gvr, h := range s.handlers {
		if gvr.GroupResource() == gr {
			return h
		}
	}
	return nil
}

// Get reads one object from storage for admission plugins. Like the informer caches Kubernetes'
// admission reads from, it may be slightly stale (a serializable read), which keeps it off the
// path of etcd's linearizable-read barrier under write load.
func (s *Server) Get(ctx context.Context, group, resource, namespace, name string) (runtime.Object, error) {
	return s.get(ctx, group, resource, namespace, name, storage.GetOptions{ResourceVersion: "0"})
}

// GetLatest reads an object with a quorum read, for a bootstrap step that reads back what it just
// wrote: Get's serializable read may reach an external etcd member that has not applied the write
// yet, and answer NotFound.
func (s *Server) GetLatest(ctx context.Context, group, resource, namespace, name string) (runtime.Object, error) {
	return s.get(ctx, group, resource, namespace, name, storage.GetOptions{})
}

// get reads one object of a served resource from storage with opts.
func (s *Server) get(ctx context.Context, group, resource, namespace, name string, opts storage.GetOptions) (runtime.Object, error) {
	gr := schema.GroupResource{Group: group, Resource: resource}
	h := s.handlerForGroupResource(gr)
	if h == nil {
		return nil, apierrors.NewNotFound(gr, name)
	}
	return h.st.Get(ctx, namespace, name, opts)
}

// List reads a collection from storage for admission plugins.
func (s *Server) List(ctx context.Context, group, resource, namespace string) (runtime.Object, error) {
	h := s.handlerForGroupResource(schema.GroupResource{Group: group, Resource: resource})
	if h == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, "")
	}
	return h.st.List(ctx, namespace, storage.ListOptions{Recursive: true, ResourceVersion: "0"})
}
