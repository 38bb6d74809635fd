package admission

import (
	"context"
	"sync"
)

// Warnings collects the warnings admission adds to one request (webhook responses,
// ValidatingAdmissionPolicies with the Warn action); the HTTP layer sends them as Warning headers.
type Warnings struct {
	mu   sync.Mutex
	msgs []string
}

// Messages returns the warnings collected so far, in the order they were added.
func (w *Warnings) Messages() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

type warningsKey struct{}

// WithWarnings returns a context under which AddWarning collects into the returned Warnings.
func WithWarnings(ctx context.Context) (context.Context, *Warnings) {
	w := &Warnings{}
	return context.WithValue(ctx, warningsKey{}, w), w
}

// AddWarning records a warning for the client of the request in ctx; outside a request it is dropped.
func AddWarning(ctx context.Context, msg string) {
	if w, ok := ctx.Value(warningsKey{}).(*Warnings); ok && msg != "" {
		w.mu.Lock()
		w.msgs = append(w.msgs, msg)
		w.mu.Unlock()
	}
}
