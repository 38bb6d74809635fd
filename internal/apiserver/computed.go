package apiserver

import (
	"context"
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
	return registry.ComputeEnv{Authorizer: s.cfg.Authorizer, Rules: s.cfg.Rules, Tokens: s.authenticateToken}
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
