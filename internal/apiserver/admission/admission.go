package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/request"
)

// Attributes describe one write for admission plugins.
type Attributes struct {
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
	User      *request.UserInfo
	DryRun    bool
	// Options are the write's options as Kubernetes sends them to webhooks: CreateOptions,
	// UpdateOptions (for a patch too) or DeleteOptions.
	Options runtime.Object
	// AuditAnnotations are what plugins record for the request's audit event (PodSecurity's
	// enforce-policy and audit-violations); kept here until skiff writes an audit log.
	AuditAnnotations map[string]string
}

// AddAuditAnnotation records an audit annotation on the request; the first value of a key stays.
func (a *Attributes) AddAuditAnnotation(key, value string) {
	if a.AuditAnnotations == nil {
		a.AuditAnnotations = map[string]string{}
	}
	if _, ok := a.AuditAnnotations[key]; !ok {
		a.AuditAnnotations[key] = value
	}
}

// PodCreate returns the pod of a create of pods itself (not of a subresource such as eviction or
// binding), the one write the pod-defaulting plugins (ServiceAccount, DefaultTolerationSeconds,
// Priority, RuntimeClass) change.
func (a *Attributes) PodCreate() (*corev1.Pod, bool) {
	if a.Verb != "create" || a.Subresource != "" || a.Resource.GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		return nil, false
	}
	pod, ok := a.Object.(*corev1.Pod)
	return pod, ok
}

// Plugin may change (Admit) and then veto (Validate) a write. Either may be a no-op. Errors are
// returned to the client as they are, so plugins return Kubernetes API errors.
type Plugin interface {
	Name() string
	Admit(ctx context.Context, a *Attributes, lookup Lookup) error
	Validate(ctx context.Context, a *Attributes, lookup Lookup) error
}

// Lookup reads other objects for admission plugins, straight from storage.
type Lookup interface {
	Get(ctx context.Context, group, resource, namespace, name string) (runtime.Object, error)
	List(ctx context.Context, group, resource, namespace string) (runtime.Object, error)
}

// Source is what a plugin that keeps informer caches starts from: a list-watch of a resource
// straight from the server's store, and the resources the server serves. The API server
// implements it.
type Source interface {
	ListWatch(gr schema.GroupResource) (*cache.ListWatch, error)
	Resources() []*registry.Resource
}
