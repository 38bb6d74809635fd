package apiserver

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/request"
)

func (h *resourceHandler) delete(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	opts, ok := h.readDeleteOptions(w, r)
	if !ok {
		return
	}
	out, _, err := h.st.Delete(r.Context(), info.Namespace, info.Name, opts, h.deleteAdmission(opts))
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.respond(w, r, http.StatusOK, out)
}

// deleteAdmission is validating admission of a delete, which the store runs on the object it read.
func (h *resourceHandler) deleteAdmission(opts *metav1.DeleteOptions) store.ValidateDeleteFunc {
	return func(ctx context.Context, current runtime.Object) error {
		m, err := meta.Accessor(current)
		if err != nil {
			return err
		}
		user, _ := request.UserFrom(ctx)
		attrs := &AdmissionAttributes{Verb: "delete", Resource: h.res, Namespace: m.GetNamespace(), Name: m.GetName(), OldObject: current, User: user, DryRun: len(opts.DryRun) > 0, Options: opts}
		return h.s.validateAdmission(ctx, attrs)
	}
}

func (h *resourceHandler) deleteCollection(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	opts, ok := h.readDeleteOptions(w, r)
	if !ok {
		return
	}
	listOpts, err := h.listOptions(r.URL.Query(), true, false)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	list, err := h.st.DeleteCollection(r.Context(), info.Namespace, listOpts, opts, h.deleteAdmission(opts))
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.respond(w, r, http.StatusOK, list)
}

// readDeleteOptions reads a delete's options from its body and query, answering the client itself
// when they are bad.
func (h *resourceHandler) readDeleteOptions(w http.ResponseWriter, r *http.Request) (*metav1.DeleteOptions, bool) {
	body, err := readBody(r)
	if err == nil {
		var opts *metav1.DeleteOptions
		if opts, err = parseDeleteOptions(r, body, h); err == nil {
			return opts, true
		}
	}
	h.s.writeError(w, r, err)
	return nil, false
}
