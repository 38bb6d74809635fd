// Package defaultbinder implements DefaultBinder: it writes the decision with
// the pods/binding subresource. The API server re-checks (a pod already bound
// is refused), which is the commit step of the scheduling plan.
package defaultbinder

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// Name is the plugin name.
const Name = "DefaultBinder"

// DefaultBinder is the plugin.
type DefaultBinder struct{ handle framework.Handle }

var _ framework.BindPlugin = &DefaultBinder{}

// New builds the plugin.
func New(_ json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	return &DefaultBinder{handle: h}, nil
}

// Name returns the plugin name.
func (*DefaultBinder) Name() string { return Name }

// Bind posts a Binding for pod to nodeName.
func (b *DefaultBinder) Bind(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := b.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return framework.AsStatus(fmt.Errorf("bind %s/%s to %s: %w", pod.Namespace, pod.Name, nodeName, err))
	}
	return nil
}
