package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// podBindingAction serves pods/binding, the scheduler's one write: it assigns the pod to a node,
// as Kubernetes' BindingREST does.
func podBindingAction() *registry.Action {
	return typedAction(corev1.SchemeGroupVersion.WithKind("Binding"), createBinding)
}

// createBinding binds req.Name to the Binding's node: the target must be a Node, the pod
// unassigned and not being deleted, and a uid in the Binding is a precondition the store checks.
func createBinding(ctx context.Context, env registry.ActionEnv, req registry.ActionRequest, binding *corev1.Binding) (runtime.Object, error) {
	if binding.Name != "" && binding.Name != req.Name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", binding.Name, req.Name))
	}
	if errs := ValidateBinding(binding); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, req.Name, errs)
	}
	pods, err := storeOf(env, podsResource)
	if err != nil {
		return nil, err
	}
	var preconditions *metav1.Preconditions
	if binding.UID != "" {
		preconditions = &metav1.Preconditions{UID: &binding.UID}
	}
	now := env.Clock.Now()
	err = pods.Modify(ctx, req.Namespace, req.Name, preconditions, req.DryRun, func(current runtime.Object) (runtime.Object, error) {
		// current is the update's own copy, free to change.
		pod, ok := current.(*corev1.Pod)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("pods store returned %T", current))
		}
		if err := assignPod(pod, binding, now); err != nil {
			return nil, bindingConflict(req.Name, err)
		}
		return pod, nil
	})
	if err != nil {
		return nil, err
	}
	return createdStatus(), nil
}

// The refusals of a binding; bindingConflict makes them the 409 of pods/binding.
var (
	errPodDeleting = errors.New("is being deleted, cannot be assigned to a host")
	errPodAssigned = errors.New("is already assigned to node")
)

// assignPod binds pod to the Binding's node and carries over its annotations, and marks it
// PodScheduled, unless the pod is going away or already bound.
func assignPod(pod *corev1.Pod, b *corev1.Binding, now time.Time) error {
	if pod.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s %w", pod.Name, errPodDeleting)
	}
	if pod.Spec.NodeName != "" {
		return fmt.Errorf("pod %s %w %q", pod.Name, errPodAssigned, pod.Spec.NodeName)
	}
	pod.Spec.NodeName = b.Target.Name
	for k, v := range b.Annotations {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = v
	}
	setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)})
	return nil
}

// bindingConflict is the 409 of a binding assignPod refused, on pods/binding as Kubernetes
// answers. The store's own errors (NotFound, a failed uid precondition) reach the client as
// the store words them.
func bindingConflict(name string, err error) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, name, err)
}

// setPodCondition adds or refreshes a condition as Kubernetes' pod utilities do: reason and
// message follow c; c's transition time is taken only when the status changes.
func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		existing := &pod.Status.Conditions[i]
		if existing.Type != c.Type {
			continue
		}
		if existing.Status == c.Status {
			c.LastTransitionTime = existing.LastTransitionTime
		}
		*existing = c
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// createdStatus is the answer of an action that creates nothing to return (a binding, an
// eviction): Success with 201, as Kubernetes answers.
func createdStatus() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated}
}
