package registry

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// Action is a subresource that is a request acting on its object rather than a view of it
// (pods/binding, pods/eviction, serviceaccounts/token), as Kubernetes' BindingREST, EvictionREST
// and TokenREST are: a POST of a body of its own kind, carried out on the stores of the served
// resources. The API server decodes the body and routes it here like any other subresource; what
// the request means (its validation, its conflicts, its answer) lives with the resource.
type Action struct {
	// Kind is the request body's kind (policy/v1 Eviction); an answer that is an object is
	// encoded in its version.
	Kind schema.GroupVersionKind
	// New returns an empty request body.
	New func() runtime.Object
	// Create carries the request out and returns what the client gets with 201: a metav1.Status
	// or an object of Kind. Errors are Kubernetes Status errors.
	Create func(ctx context.Context, env ActionEnv, req ActionRequest) (runtime.Object, error)
}

// ActionRequest is one POST to an Action.
type ActionRequest struct {
	// Namespace and Name name the parent object from the URL.
	Namespace, Name string
	// Body is the decoded request body, of the Action's Kind.
	Body runtime.Object
	// DryRun is the request's ?dryRun=All; a body that carries options of its own (an Eviction's
	// deleteOptions) may ask for it there too.
	DryRun bool
	// Admit runs the admission chain (mutating, then validating) on body as a create of the
	// subresource, with the request's user. The action calls it at the moment Kubernetes does
	// (once the parent is known to exist); nil admits everything.
	Admit func(ctx context.Context, body runtime.Object, dryRun bool) error
}

// AdmitBody runs the request's admission on body (see ActionRequest.Admit).
func (r ActionRequest) AdmitBody(ctx context.Context, body runtime.Object, dryRun bool) error {
	if r.Admit == nil {
		return nil
	}
	return r.Admit(ctx, body, dryRun)
}

// ActionEnv is what the API server lends actions: the stores of the served resources, its clock
// and its token issuer.
type ActionEnv struct {
	// Stores finds the generic store of a served resource.
	Stores ObjectStores
	Clock  clock.PassiveClock
	// Tokens issues service account tokens; nil when the server issues none.
	Tokens *TokenIssuing
}

// TokenIssuing is the API server's service account token issuer and its own audiences, which a
// TokenRequest without audiences gets.
type TokenIssuing struct {
	Issuer    TokenIssuer
	Audiences []string
}

// TokenIssuer signs service account tokens (serviceaccount.Issuer).
type TokenIssuer interface {
	Issue(req serviceaccount.Request, now time.Time) (token string, expiration time.Time, err error)
}

// ObjectStores gives the generic store of a served resource; ok is false when it is not served.
type ObjectStores interface {
	Store(gr schema.GroupResource) (store ObjectStore, ok bool)
}

// ObjectStore is the part of the generic store (internal/apiserver/store) an action writes
// through: the store checks preconditions and turns a failed one, or a lost compare-and-swap, into
// the 409 Conflict every other write gets, and maps storage errors to Status errors.
type ObjectStore interface {
	// Get reads one object; with stale a serializable read that may lag (as an informer would).
	Get(ctx context.Context, namespace, name string, stale bool) (runtime.Object, error)
	// List reads every object of namespace.
	List(ctx context.Context, namespace string) (runtime.Object, error)
	// GuaranteedUpdate changes a stored object with tryUpdate (given a copy it may change),
	// checking preconditions against the current object on every attempt, with no strategy;
	// with dryRun nothing is written and the result is the object that would have been.
	GuaranteedUpdate(ctx context.Context, namespace, name string, preconditions *metav1.Preconditions, dryRun bool,
		tryUpdate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error)
	// Modify is GuaranteedUpdate for a caller that needs no result (a binding answers with a
	// Status), which spares decoding it.
	Modify(ctx context.Context, namespace, name string, preconditions *metav1.Preconditions, dryRun bool,
		tryUpdate func(current runtime.Object) (runtime.Object, error)) error
	// Delete deletes one object as a DELETE of it does (preconditions, grace, finalizers, the
	// delete's admission, dry run from options).
	Delete(ctx context.Context, namespace, name string, options *metav1.DeleteOptions) error
}
