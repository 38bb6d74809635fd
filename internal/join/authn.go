package join

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/request"
)

// SecretLookup reads a kube-system Secret by name; it returns (nil, nil) when there is none.
type SecretLookup func(ctx context.Context, name string) (*corev1.Secret, error)

// Authenticator recognises bearer bootstrap tokens ("<id>.<secret>") whose Secret exists, has
// not expired and is for authentication, as kube-apiserver's --enable-bootstrap-token-auth does.
// Other bearer tokens are left to the other authenticators.
type Authenticator struct {
	Lookup SecretLookup
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

// AuthenticateRequest implements the API server's Authenticator.
func (a Authenticator) AuthenticateRequest(r *http.Request) (*request.UserInfo, bool, error) {
	auth := r.Header.Get("Authorization")
	raw, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return nil, false, nil
	}
	tok, ok := ParseBearer(strings.TrimSpace(raw))
	if !ok {
		return nil, false, nil
	}
	secret, err := a.Lookup(r.Context(), SecretPrefix+tok.ID)
	if err != nil {
		return nil, false, fmt.Errorf("look up bootstrap token %s: %w", tok.ID, err)
	}
	user, err := Authenticate(secret, tok, a.Clock.Now())
	if err != nil {
		if a.Log != nil {
			a.Log.Info("bootstrap token refused", "id", tok.ID, "reason", err.Error())
		}
		// Kubernetes answers an unknown or bad token with a plain 401; the reason stays in the log.
		return nil, false, errors.New("invalid bootstrap token")
	}
	return user, true, nil
}
