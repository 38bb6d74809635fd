package apiserver

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skiff-sh/skiff/internal/registry"
)

// compute serves a create of a computed resource (registry.Resource.Compute): decode, answer, 201.
// Nothing is stored, so admission, managed fields and dry-run have nothing to act on.
func (h *resourceHandler) compute(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	if info.Verb != "create" || info.Name != "" {
		h.s.writeError(w, r, methodNotAllowed())
		return
	}
	// A review has no table form: asked for one, the answer is 406 before anything is computed,
	// as kube-apiserver answers for a backend without a table convertor.
	choice, err := negotiateOutput(acceptsHeader(r), h.mediaTypes, false)
	if err != nil {
		h.s.writeError(w, r, notAcceptable(err))
		return
	}
	if choice.kind == outputTable {
		h.s.writeError(w, r, notAcceptable(fmt.Errorf("the resource %s does not support being converted to a Table", h.res.Plural)))
		return
	}
	_, obj, warnings, ok := h.readObject(w, r, info)
	if !ok {
		return
	}
	out, err := h.res.Compute(r.Context(), h.s.computeEnv(), obj)
	if err != nil {
		if _, isStatus := err.(apierrors.APIStatus); !isStatus {
			err = apierrors.NewInternalError(err)
		}
		h.s.writeError(w, r, err)
		return
	}
	warningHeader(w, warnings)
	h.respond(w, r, http.StatusCreated, out)
}

func (s *Server) computeEnv() registry.ComputeEnv {
	return registry.ComputeEnv{Authorizer: s.cfg.Authorizer, Rules: s.cfg.Rules, Tokens: s.authenticateToken,
		SchedulingExplainer: s.cfg.SchedulingExplainer}
}

// authenticateToken runs the server's own authenticators on a bearer token, as TokenReview does.
func (s *Server) authenticateToken(ctx context.Context, token string) (*UserInfo, bool, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return nil, false, err
	}
	r.Header.Set("Authorization", "Bearer "+token)
	return s.cfg.Authenticator.AuthenticateRequest(r)
}
