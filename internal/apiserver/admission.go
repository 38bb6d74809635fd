package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

// AdmissionAttributes describe one write for admission plugins.
type AdmissionAttributes struct {
	Verb        string // create, update, delete (patch is an update), connect (exec, attach, port-forward)
	Resource    *registry.Resource
	Subresource string
	Namespace   string
	Name        string
	// Kind is the object's kind when it is not the resource's: the options object of a connect
	// (PodExecOptions for pods/exec). Empty otherwise.
	Kind      schema.GroupVersionKind
	Object    runtime.Object // the new object (nil for delete)
	OldObject runtime.Object // the stored object (nil for create)
	User      *UserInfo
	DryRun    bool
	// Options are the write's options as Kubernetes sends them to webhooks: CreateOptions,
	// UpdateOptions (for a patch too) or DeleteOptions.
	Options runtime.Object
	// AuditAnnotations are what plugins record for the request's audit event (PodSecurity's
	// enforce-policy and audit-violations); kept here until skiff writes an audit log.
	AuditAnnotations map[string]string
}

// AddAuditAnnotation records an audit annotation on the request; the first value of a key stays.
func (a *AdmissionAttributes) AddAuditAnnotation(key, value string) {
	if a.AuditAnnotations == nil {
		a.AuditAnnotations = map[string]string{}
	}
	if _, ok := a.AuditAnnotations[key]; !ok {
		a.AuditAnnotations[key] = value
	}
}

// AdmissionPlugin may change (Admit) and then veto (Validate) a write. Either may be a no-op. Errors are
// returned to the client as they are, so plugins return Kubernetes API errors.
type AdmissionPlugin interface {
	Name() string
	Admit(ctx context.Context, a *AdmissionAttributes, lookup Lookup) error
	Validate(ctx context.Context, a *AdmissionAttributes, lookup Lookup) error
}

// Lookup reads other objects for admission plugins, straight from storage.
type Lookup interface {
	Get(ctx context.Context, group, resource, namespace, name string) (runtime.Object, error)
	List(ctx context.Context, group, resource, namespace string) (runtime.Object, error)
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

// admissionWarnings collects the warnings admission adds to one request (webhook responses,
// ValidatingAdmissionPolicies with the Warn action); the HTTP layer sends them as Warning headers.
type admissionWarnings struct {
	mu   sync.Mutex
	msgs []string
}

type admissionWarningsKey struct{}

// AddAdmissionWarning records a warning for the client of the request in ctx; outside a request
// it is dropped.
func AddAdmissionWarning(ctx context.Context, msg string) {
	if w, ok := ctx.Value(admissionWarningsKey{}).(*admissionWarnings); ok && msg != "" {
		w.mu.Lock()
		w.msgs = append(w.msgs, msg)
		w.mu.Unlock()
	}
}

// warningWriter adds the collected admission warnings as headers just before the status line goes
// out, whichever handler writes the response (success or error).
type warningWriter struct {
	wrappedWriter
	warnings *admissionWarnings
	wrote    bool
}

func (w *warningWriter) flushWarnings() {
	if w.wrote {
		return
	}
	w.wrote = true
	w.warnings.mu.Lock()
	defer w.warnings.mu.Unlock()
	for _, msg := range w.warnings.msgs {
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
	warnings := &admissionWarnings{}
	return &warningWriter{wrappedWriter: wrappedWriter{w}, warnings: warnings}, r.WithContext(context.WithValue(r.Context(), admissionWarningsKey{}, warnings))
}
