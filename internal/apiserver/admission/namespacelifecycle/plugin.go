package namespacelifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Name is Kubernetes' name of the plugin.
const Name = "NamespaceLifecycle"

// Plugin refuses new objects in a namespace that does not exist or is being terminated.
type Plugin struct{}

func (Plugin) Name() string { return Name }

func (Plugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error { return nil }

func (Plugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if a.Verb != "create" || !a.Resource.Namespaced || a.Namespace == "" {
		return nil
	}
	obj, err := lookup.Get(ctx, "", "namespaces", "", a.Namespace)
	if err != nil {
		return err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	// Events about a terminating namespace's last objects are still welcome.
	if a.Resource.Plural == "events" {
		return nil
	}
	forbidden := apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	forbidden.ErrStatus.Details.Causes = append(forbidden.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace), Field: "metadata.namespace",
	})
	return forbidden
}
