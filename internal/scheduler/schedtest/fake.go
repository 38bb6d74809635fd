package schedtest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

var podsResource = v1.SchemeGroupVersion.WithResource("pods")

// BindHook runs inside the binding reactor, serialized with every other fake
// client call; a non-nil error fails the binding.
type BindHook func(pod *v1.Pod, nodeName string) error

// InstallBindingReactor makes the fake clientset implement pods/binding as
// the API server does: it sets spec.nodeName and PodScheduled=True, and
// refuses (409) a pod that is already bound or whose UID differs.
func InstallBindingReactor(cs *fake.Clientset, hook BindHook) {
	InstallBindingReactorWithHub(cs, hook, nil)
}

// InstallBindingReactorWithHub is InstallBindingReactor for a clientset whose
// watches go through hub (InstallBufferedWatches).
func InstallBindingReactorWithHub(cs *fake.Clientset, hook BindHook, hub *WatchHub) {
	cs.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(clienttesting.CreateAction)
		if !ok || create.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binding := create.GetObject().(*v1.Binding)
		obj, err := cs.Tracker().Get(podsResource, binding.Namespace, binding.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		if binding.UID != "" && binding.UID != pod.UID {
			return true, nil, apierrors.NewConflict(podsResource.GroupResource(), pod.Name, fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", binding.UID, pod.UID))
		}
		if pod.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(podsResource.GroupResource(), pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		if hook != nil {
			if err := hook(pod, binding.Target.Name); err != nil {
				return true, nil, err
			}
		}
		pod.Spec.NodeName = binding.Target.Name
		setCondition(pod, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()})
		if err := cs.Tracker().Update(podsResource, pod, pod.Namespace); err != nil {
			return true, nil, err
		}
		if hub != nil {
			if updated, err := cs.Tracker().Get(podsResource, pod.Namespace, pod.Name); err == nil {
				hub.Emit(podsResource, watch.Modified, updated)
			}
		}
		return true, binding, nil
	})
}

func setCondition(pod *v1.Pod, c v1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// Bindings returns the pods/binding creations recorded by the fake client, as
// "namespace/name -> node".
func Bindings(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		create, ok := a.(clienttesting.CreateAction)
		if !ok || a.GetResource().Resource != "pods" || a.GetSubresource() != "binding" {
			continue
		}
		b := create.GetObject().(*v1.Binding)
		out = append(out, b.Namespace+"/"+b.Name+" -> "+b.Target.Name)
	}
	return out
}
