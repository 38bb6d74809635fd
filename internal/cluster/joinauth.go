package cluster

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver"
	"github.com/skiff-sh/skiff/internal/join"
	"github.com/skiff-sh/skiff/internal/storage"
)

// bootstrapTokenAuthenticator authenticates joining nodes' bootstrap tokens against the token
// Secrets the server itself stores. The server is set once built (the authenticator is part of
// its configuration); until then no token authenticates.
func bootstrapTokenAuthenticator(cfg *Config, srv *atomic.Pointer[apiserver.Server]) join.Authenticator {
	return join.Authenticator{
		Clock: clock.RealClock{},
		Log:   cfg.Logger,
		Lookup: func(ctx context.Context, name string) (*corev1.Secret, error) {
			s := srv.Load()
			if s == nil {
				return nil, nil
			}
			obj, err := s.Get(ctx, "", "secrets", join.SecretNamespace, name)
			if apierrors.IsNotFound(err) || storage.IsNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			secret, ok := obj.(*corev1.Secret)
			if !ok {
				return nil, fmt.Errorf("secret %s: unexpected %T", name, obj)
			}
			return secret, nil
		},
	}
}
