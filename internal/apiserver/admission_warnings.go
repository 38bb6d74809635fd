package apiserver

import "context"

// CollectAdmissionWarnings returns a context that collects the admission warnings added under it
// and a function reading them back: for plugins' tests and for callers outside an HTTP request.
func CollectAdmissionWarnings(ctx context.Context) (context.Context, func() []string) {
	w := &admissionWarnings{}
	return context.WithValue(ctx, admissionWarningsKey{}, w), func() []string {
		w.mu.Lock()
		defer w.mu.Unlock()
		return append([]string(nil), w.msgs...)
	}
}
