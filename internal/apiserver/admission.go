package apiserver

import (
	"context"
	"net/http"
	"strconv"

	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/defaultstorageclass"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/defaulttolerationseconds"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/namespacelifecycle"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/priority"
	"github.com/skiff-sh/skiff/internal/apiserver/admission/runtimeclass"
	saadmission "github.com/skiff-sh/skiff/internal/apiserver/admission/serviceaccount"
)

// The admission vocabulary lives in internal/apiserver/admission so that the plugins, one package
// each below it, never import the HTTP layer; these names keep the server's callers (and the node
// assembly's) as they were.
type (
	// AdmissionAttributes describe one write for admission plugins.
	AdmissionAttributes = admission.Attributes
	// AdmissionPlugin may change (Admit) and then veto (Validate) a write.
	AdmissionPlugin = admission.Plugin
	// Lookup reads other objects for admission plugins, straight from storage.
	Lookup = admission.Lookup
)

// DefaultAdmission is the built-in admission chain, in Kubernetes' order.
func DefaultAdmission() []AdmissionPlugin {
	return DefaultAdmissionTolerating(DefaultTolerationSecondsValue, DefaultTolerationSecondsValue)
}

// DefaultTolerationSecondsValue is kube-apiserver's default of --default-not-ready-toleration-seconds
// and --default-unreachable-toleration-seconds.
const DefaultTolerationSecondsValue = defaulttolerationseconds.DefaultSeconds

// DefaultAdmissionTolerating is the built-in chain with DefaultTolerationSeconds adding the given
// tolerations (kube-apiserver's --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds). The plugins live one per package under
// internal/apiserver/admission; this is only their order.
func DefaultAdmissionTolerating(notReadySeconds, unreachableSeconds int64) []AdmissionPlugin {
	return []AdmissionPlugin{namespacelifecycle.New(clock.RealClock{}), saadmission.Plugin{},
		defaulttolerationseconds.Plugin{NotReady: notReadySeconds, Unreachable: unreachableSeconds},
		priority.Plugin{}, runtimeclass.Plugin{}, defaultstorageclass.Plugin{}}
}

func (s *Server) admit(ctx context.Context, a *AdmissionAttributes) error {
	for _, p := range s.cfg.Admission {
		if err := p.Admit(ctx, a, s); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) validateAdmission(ctx context.Context, a *AdmissionAttributes) error {
	for _, p := range s.cfg.Admission {
		if err := p.Validate(ctx, a, s); err != nil {
			return err
		}
	}
	return nil
}

// warningWriter adds the collected admission warnings as headers just before the status line goes
// out, whichever handler writes the response (success or error).
type warningWriter struct {
	wrappedWriter
	warnings *admission.Warnings
	wrote    bool
}

func (w *warningWriter) flushWarnings() {
	if w.wrote {
		return
	}
	w.wrote = true
	for _, msg := range w.warnings.Messages() {
		w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
	}
}

func (w *warningWriter) WriteHeader(code int) {
	w.flushWarnings()
	w.ResponseWriter.WriteHeader(code)
}

func (w *warningWriter) Write(b []byte) (int, error) {
	w.flushWarnings()
	return w.ResponseWriter.Write(b)
}

// Flush passes through for watches and streamed responses.
func (w *warningWriter) Flush() {
	w.flushWarnings()
	w.wrappedWriter.Flush()
}

// withAdmissionWarnings prepares a write request to collect admission warnings.
func withAdmissionWarnings(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	ctx, warnings := admission.WithWarnings(r.Context())
	return &warningWriter{wrappedWriter: wrappedWriter{w}, warnings: warnings}, r.WithContext(ctx)
}
