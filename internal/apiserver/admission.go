package apiserver

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/registry"
)

// AdmissionAttributes describe one write for admission plugins.
type AdmissionAttributes struct {
	Verb        string // create, update, delete (patch is an update)
	Resource    *registry.Resource
	Subresource string
	Namespace   string
	Name        string
	Object      runtime.Object // the new object (nil for delete)
	OldObject   runtime.Object // the stored object (nil for create)
	User        *UserInfo
	DryRun      bool
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
