package apiserver

import (
	"context"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// CollectAdmissionWarnings returns a context that collects the admission warnings added under it
// and a function reading them back: for plugins' tests and for callers outside an HTTP request.
func CollectAdmissionWarnings(ctx context.Context) (context.Context, func() []string) {
	ctx, w := admission.WithWarnings(ctx)
	return ctx, w.Messages
}
